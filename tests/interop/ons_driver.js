'use strict';
// Drives the real npm client ali-ons (a RocketMQ 4.x remoting client) against a
// `rocketmq-emulator serve` for tests/interop/test_ali_ons.py.
//
//   node ons_driver.js '<json config>'
//
// config: {nameSrv, topic, group, okCount, poisonCount, maxReconsumeTimes, sql}
// With `sql`, each "ok-<i>" message carries the user properties region (eu for even i, us
// for odd) and amount (10 * i), and the consumer subscribes with that SQL92 expression
// (ali-ons' {expressionType, subString} subscription, as MessageSelector.bySql).
// It produces okCount messages with body "ok-<i>" and poisonCount with "poison-<i>"
// (tag TagA / TagP, key = body), then consumes the topic in group `group`: "ok-*"
// messages succeed, "poison-*" ones fail (poison-0's first delivery by returning
// Consumer.ACTION_RETRY, every other failure by throwing), so the client sends them back with
// CONSUMER_SEND_MSG_BACK. Every step is one JSON line on stdout; warnings and errors
// of the client are JSON lines too ({"event": "log"|"error", ...}), so the test can
// insist on none. It stops (closing consumer and producer: offsets committed,
// UNREGISTER_CLIENT) when stdin closes.

const { Producer, Consumer, Message } = require('ali-ons');

const config = JSON.parse(process.argv[2]);

function emit(event, fields) {
  process.stdout.write(JSON.stringify(Object.assign({ event }, fields)) + '\n');
}

// ali-ons logs through this object; warnings and errors reach the test.
const logger = {
  debug() {},
  info() {},
  warn(...args) { emit('log', { level: 'warn', text: args.map(String).join(' ') }); },
  error(...args) { emit('log', { level: 'error', text: args.map(String).join(' ') }); },
};

async function main() {
  // Route, heartbeat and rebalance timers at 1 s instead of 10-30 s: ali-ons looks up
  // %RETRY%<group> before its first heartbeat (which creates it) and otherwise would
  // only see that route 30 s later. Client timers run in real time; the server's
  // virtual clock is moved by the test.
  const common = { nameSrv: config.nameSrv, httpclient: {}, logger, pollNameServerInteval: 1000,
    heartbeatBrokerInterval: 1000, rebalanceInterval: 1000, persistConsumerOffsetInterval: 1000 };
  const producer = new Producer(Object.assign({ producerGroup: config.group + '_PRODUCER' }, common));
  producer.on('error', err => emit('error', { who: 'producer', text: err.message }));
  await producer.ready();

  const bodies = [];
  for (let i = 0; i < config.okCount; i++) bodies.push([ 'ok-' + i, 'TagA' ]);
  for (let i = 0; i < config.poisonCount; i++) bodies.push([ 'poison-' + i, 'TagP' ]);
  for (const [ body, tag ] of bodies) {
    const msg = new Message(config.topic, tag, body);
    msg.keys = [ body ];
    if (config.sql && body.startsWith('ok-')) {
      const i = Number(body.slice(3));
      msg.properties.region = i % 2 === 0 ? 'eu' : 'us';
      msg.properties.amount = String(10 * i);
    }
    const result = await producer.send(msg);
    emit('sent', { body, msgId: result.msgId, queueId: result.messageQueue.queueId,
      queueOffset: result.queueOffset, status: result.sendStatus });
  }

  const consumer = new Consumer(Object.assign({
    consumerGroup: config.group,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
    maxReconsumeTimes: config.maxReconsumeTimes,
  }, common));
  consumer.on('error', err => emit('error', { who: 'consumer', text: err.message }));
  let poisonCalls = 0;
  const selector = config.sql ? { expressionType: 'SQL92', subString: config.sql } : '*';
  consumer.subscribe(config.topic, selector, async msg => {
    const body = msg.body.toString();
    const fields = { body, msgId: msg.msgId, topic: msg.topic, tags: msg.tags,
      reconsumeTimes: msg.reconsumeTimes, originMsgId: msg.originMessageId || null };
    if (!body.startsWith('poison-')) {
      emit('consumed', fields);
      return;
    }
    emit('failed', fields);
    // ali-ons honours ACTION_RETRY only on a first delivery: its %RETRY% wrapper drops
    // the handler's return value, so retried deliveries fail by throwing.
    if (body === 'poison-0' && msg.reconsumeTimes === 0) return Consumer.ACTION_RETRY;
    poisonCalls++;
    throw new Error('planted failure ' + poisonCalls);
  });
  await consumer.ready();
  emit('consumer-ready', {});

  await new Promise(resolve => {
    process.stdin.on('end', resolve);
    process.stdin.resume();
  });
  await consumer.close();
  await producer.close();
  emit('closed', {});
  // ali-ons keeps no timers after close, but a stray socket must not hold the test.
  setTimeout(() => process.exit(0), 200).unref();
}

main().catch(err => {
  emit('fatal', { text: String(err && err.stack || err) });
  process.exit(1);
});
