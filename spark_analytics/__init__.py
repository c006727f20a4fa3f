"""Spark analytics over commit-log snapshots.

    store.snapshot.take_snapshot(data_dir, out_dir) -> Manifest the snapshot is the store's format: it lives
                                                                in store/ (snapshot, store_dir, segment_walk)
    spark.read.format("rocketmq-commitlog").load(dir)           the PySpark data source (datasource.py)
    session.build_session(master=None)                          the SparkSession, loopback only, source registered;
                                                                preflight checks the extra, master, Java first
    store_accounts.account_store(dir)                           the store's accounting (store/accounting.py:
                                                                THE definition of produced / succeeded /
                                                                dead_lettered / send_backs) over a directory
    jobs.analyze(spark, dir, offsets)                           the analyses as DataFrames
    report.analyze_snapshot(dir, out)                           report.html, summary.json, aggregates/*.parquet
    cli.snapshot_main / cli.analyze_main                        the two rocketmq-emulator subcommands

Importing this package imports nothing heavy: pyspark is loaded only by the modules
that need it (datasource, session, jobs, report), numpy by commitlog and columnar.
"""
__all__ = ["charts", "cli", "columnar", "commitlog", "datasource", "errors", "jobs",
           "preflight", "report", "session", "store_accounts"]
