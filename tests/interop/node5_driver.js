'use strict';
// Drives the real npm client rocketmq-client-nodejs 1.0.8 (a RocketMQ 5.x gRPC client)
// against `rocketmq-emulator serve`'s gRPC port for tests/interop/test_node5_client.py.
//
//   node node5_driver.js '<json config>'
//
// config: {endpoints, topic, group, body, messageGroup?} (messageGroup: a FIFO message)
// It sends one message `body` to `topic` (a Producer), then consumes `topic` in `group`
// with a PushConsumer whose listener always fails, so the client gives each delivery
// back (ChangeInvisibleDuration, with what its retry policy says). Every step is one
// JSON line on stdout: {"event": "sent"}, {"event": "delivery", "attempt": N}; the
// client's warnings and errors are JSON lines too ({"event": "log", ...}). It stops
// (shutting both clients down) when stdin closes.

const { Producer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');

const config = JSON.parse(process.argv[2]);

function emit(event, fields) {
  process.stdout.write(JSON.stringify(Object.assign({ event }, fields)) + '\n');
}

// The client logs through this object (its default writes to ~/logs): warnings and errors reach the test.
const logger = {
  debug() {},
  info() {},
  warn(...args) { emit('log', { level: 'warn', text: args.map(String).join(' ') }); },
  error(...args) { emit('log', { level: 'error', text: args.map(String).join(' ') }); },
};

async function main() {
  const common = { endpoints: config.endpoints, namespace: '', logger, requestTimeout: 3000 };
  const producer = new Producer(Object.assign({ topics: [ config.topic ] }, common));
  await producer.startup();
  const message = { topic: config.topic, body: Buffer.from(config.body) };
  if (config.messageGroup) {
    message.messageGroup = config.messageGroup;
  }
  await producer.send(message);
  emit('sent', {});
  const consumer = new PushConsumer(Object.assign({
    consumerGroup: config.group,
    subscriptions: new Map([ [ config.topic, '*' ] ]),
    messageListener: {
      async consume(messageView) {
        emit('delivery', { attempt: messageView.deliveryAttempt, body: messageView.body.toString() });
        return ConsumeResult.FAILURE;
      },
    },
  }, common));
  await consumer.startup();
  emit('started', {});
  process.stdin.resume();
  process.stdin.on('end', async () => {
    await consumer.shutdown();
    await producer.shutdown();
    emit('stopped', {});
    process.exit(0);
  });
}

main().catch(err => {
  emit('error', { text: String(err && err.stack || err) });
  process.exit(1);
});
