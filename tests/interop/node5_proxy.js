'use strict';
// Drives the real npm client rocketmq-client-nodejs 1.0.8 (a RocketMQ 5.x gRPC client)
// against `rocketmq-emulator serve`'s gRPC port the way its users test against a local
// proxy, for tests/interop/test_node5_proxy_answers.py (issue 42).
//
//   node node5_proxy.js '<json config>'
//
// config: {endpoints, mode, ...}; every step is one JSON line on stdout, and the
// client's warnings and errors are {"event": "log", ...} lines. Modes:
//   types        {fifoTopic, plainTopic}: a NORMAL message to the FIFO topic (refused by
//                the client: {"event": "refused"}), a FIFO one to it and a NORMAL one to
//                the untyped topic ({"event": "sent", messageId, transactionId}).
//   unknown      {topic}: a Producer of a topic that does not exist: its start-up fails
//                ({"event": "startup-failed"}).
//   transaction  {topic, answer}: commits one transaction, rolls one back and leaves one
//                unended ({"event": "sent", ...} each); the checker answers each
//                check-back with `answer` ("commit", "rollback" or "unknown") and says so
//                ({"event": "checked", messageId, body, topic}).
// It stops (shutting the producer down) when stdin closes.

const { Producer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const config = JSON.parse(process.argv[2]);

function emit(event, fields) {
  process.stdout.write(JSON.stringify(Object.assign({ event }, fields)) + '\n');
}

const logger = {
  debug() {},
  info() {},
  warn(...args) { emit('log', { level: 'warn', text: args.map(String).join(' ') }); },
  error(...args) { emit('log', { level: 'error', text: args.map(String).join(' ') }); },
};

const common = { endpoints: config.endpoints, namespace: '', logger, requestTimeout: 3000 };

function receiptFields(receipt, body) {
  return { body, messageId: receipt.messageId, transactionId: receipt.transactionId };
}

async function types() {
  const producer = new Producer(Object.assign({ topics: [ config.fifoTopic, config.plainTopic ] }, common));
  await producer.startup();
  try {
    await producer.send({ topic: config.fifoTopic, body: Buffer.from('normal to fifo') });
    emit('sent', { body: 'normal to fifo' });
  } catch (err) {
    emit('refused', { text: String(err && err.message || err) });
  }
  const fifo = await producer.send({ topic: config.fifoTopic, body: Buffer.from('fifo'), messageGroup: 'g1' });
  emit('sent', receiptFields(fifo, 'fifo'));
  const plain = await producer.send({ topic: config.plainTopic, body: Buffer.from('normal') });
  emit('sent', receiptFields(plain, 'normal'));
  return producer;
}

async function unknown() {
  const producer = new Producer(Object.assign({ topics: [ config.topic ] }, common));
  try {
    await producer.startup();
    emit('started', {});
  } catch (err) {
    emit('startup-failed', { text: String(err && err.message || err) });
    return null;
  }
  return producer;
}

const ANSWERS = {
  commit: TransactionResolution.COMMIT,
  rollback: TransactionResolution.ROLLBACK,
  unknown: TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED,
};

async function transaction() {
  const checker = {
    async check(messageView) {
      emit('checked', { messageId: messageView.messageId, body: messageView.body.toString(),
        topic: messageView.topic });
      return ANSWERS[config.answer];
    },
  };
  const producer = new Producer(Object.assign({ topics: [ config.topic ], checker }, common));
  await producer.startup();
  for (const [ body, end ] of [ [ 'commit me', 'commit' ], [ 'roll me back', 'rollback' ], [ 'unended', null ] ]) {
    const tx = producer.beginTransaction();
    const receipt = await producer.send({ topic: config.topic, body: Buffer.from(body) }, tx);
    if (end === 'commit') {
      await tx.commit();
    } else if (end === 'rollback') {
      await tx.rollback();
    }
    emit('sent', Object.assign(receiptFields(receipt, body), { end }));
  }
  return producer;
}

async function main() {
  const run = { types, unknown, transaction }[config.mode];
  const producer = await run();
  emit('ready', {});
  process.stdin.resume();
  process.stdin.on('end', async () => {
    if (producer) {
      await producer.shutdown();
    }
    emit('stopped', {});
    process.exit(0);
  });
}

main().catch(err => {
  emit('error', { text: String(err && err.stack || err) });
  process.exit(1);
});
