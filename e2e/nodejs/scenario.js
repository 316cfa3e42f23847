// Runs one scenario of Apache's Node.js RocketMQ 5 client against a
// rocketstore broker's gRPC endpoint and prints one JSON line of results
// for the Go test (e2e/nodejs_test.go) to check; it exits non-zero on any
// failure. Usage: node scenario.js <scenario> (settings in the environment:
// ENDPOINT, TOPIC, GROUP, COUNT).
'use strict';
const assert = require('node:assert/strict');
const { Producer, SimpleConsumer, PushConsumer, ConsumeResult, FilterExpression } = require('rocketmq-client-nodejs');
const { FilterType, TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const endpoints = process.env.ENDPOINT;
const topic = process.env.TOPIC;
const group = process.env.GROUP;
const count = Number(process.env.COUNT || '10');
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const deadline = Date.now() + Number(process.env.DEADLINE_MS || '60000');

function left() {
  const ms = deadline - Date.now();
  if (ms <= 0) throw new Error('scenario deadline passed');
  return ms;
}

async function producer(extra = {}) {
  const p = new Producer({ endpoints, namespace: '', topics: [ topic ], logger: quiet, ...extra });
  await p.startup();
  return p;
}

async function simple(filter = '*', awaitDuration = 5000, consumerGroup = group) {
  const c = new SimpleConsumer({ endpoints, namespace: '', consumerGroup, logger: quiet,
    subscriptions: new Map([[ topic, filter ]]), awaitDuration });
  await c.startup();
  return c;
}

// receiveUntil receives (and acks unless told not to) until want messages came.
async function receiveUntil(c, want, { invisible = 15000, ack = true } = {}) {
  const got = [];
  while (got.length < want) {
    left();
    const ms = await c.receive(32, invisible);
    for (const m of ms) {
      assert.notEqual(m.corrupted, true, 'body digest mismatch');
      got.push(m);
      if (ack) await c.ack(m);
    }
  }
  return got;
}

function view(m) {
  return { id: m.messageId, tag: m.tag, keys: m.keys, body: m.body.toString(), attempt: m.deliveryAttempt,
    group: m.messageGroup, props: Object.fromEntries(m.properties), delivery: m.deliveryTimestamp ? m.deliveryTimestamp.getTime() : 0 };
}

const scenarios = {
  // Normal messages with tags, keys and properties; a TAG filter; ack.
  async normal() {
    const p = await producer();
    const sent = [];
    for (let i = 0; i < count; i++) {
      const tag = i % 2 === 0 ? 'TagA' : 'TagB';
      const r = await p.send({ topic, tag, keys: [ `key-${i}`, `k${i}` ], body: Buffer.from(`body-${i}`),
        properties: new Map([[ 'index', String(i) ], [ 'parity', i % 2 === 0 ? 'even' : 'odd' ]]) });
      sent.push({ id: r.messageId, tag, i });
    }
    await p.shutdown();
    const c = await simple(new FilterExpression('TagA', FilterType.TAG));
    const got = await receiveUntil(c, sent.filter(s => s.tag === 'TagA').length);
    // Nothing acked comes back: one more receive finds nothing.
    const again = await c.receive(32, 15000);
    await c.shutdown();
    // Another group, the same messages, an SQL92 filter.
    const s = await simple(new FilterExpression("parity = 'odd' AND index IS NOT NULL", FilterType.SQL), 5000, group + 'SQL');
    const sql = await receiveUntil(s, sent.filter(m => m.tag === 'TagB').length);
    await s.shutdown();
    return { sent, received: got.map(view), again: again.length, sql: sql.map(view) };
  },

  // Invisible time: an unacked message comes back after it, with the next
  // delivery attempt; changeInvisibleDuration gives a new handle and time.
  async invisible() {
    const p = await producer();
    const r = await p.send({ topic, tag: 'T', body: Buffer.from('again') });
    await p.shutdown();
    const c = await simple('*', 15000);
    const [ first ] = await receiveUntil(c, 1, { invisible: 10000, ack: false });
    const t0 = Date.now();
    const [ second ] = await receiveUntil(c, 1, { invisible: 10000, ack: false });
    const expiredAfter = Date.now() - t0;
    const oldHandle = second.receiptHandle;
    await c.changeInvisibleDuration(second, 1000);
    const changed = second.receiptHandle !== oldHandle;
    const t1 = Date.now();
    const [ third ] = await receiveUntil(c, 1, { invisible: 10000, ack: false });
    const changedAfter = Date.now() - t1;
    await c.ack(third);
    await c.shutdown();
    return { id: r.messageId, attempts: [ first, second, third ].map(m => m.deliveryAttempt),
      ids: [ first, second, third ].map(m => m.messageId), expiredAfter, changedAfter, changed };
  },

  // FIFO: messages of one group in order, the next only after the ack.
  async fifo() {
    const p = await producer();
    for (let i = 0; i < count; i++) {
      await p.send({ topic, messageGroup: 'order-1', body: Buffer.from(String(i)) });
    }
    await p.shutdown();
    const c = await simple();
    const got = await receiveUntil(c, count);
    await c.shutdown();
    return { received: got.map(view) };
  },

  // Delay: delivered at the delivery timestamp, not before.
  async delay() {
    const p = await producer();
    const at = new Date(Date.now() + 3000);
    const r = await p.send({ topic, deliveryTimestamp: at, body: Buffer.from('later') });
    const sentAt = Date.now();
    await p.shutdown();
    const c = await simple('*', 10000);
    const [ m ] = await receiveUntil(c, 1);
    const receivedAt = Date.now();
    await c.shutdown();
    return { id: r.messageId, got: m.messageId, deliverAt: at.getTime(), sentAt, receivedAt, delivery: view(m).delivery };
  },

  // A message type the topic does not take is refused by the client
  // (route's accept_message_types) before any send.
  async wrongtype() {
    const p = await producer();
    let error = '';
    try {
      await p.send({ topic, messageGroup: 'g', body: Buffer.from('fifo to a normal topic') });
    } catch (e) {
      error = String(e && e.message);
    }
    await p.shutdown();
    return { error };
  },

  // Transactions: a commit is delivered, a rollback is not, and one left
  // open is committed when the broker checks back through Telemetry.
  async transaction() {
    const checked = [];
    const p = await producer({ checker: { async check(m) {
      checked.push(m.body.toString());
      return m.body.toString() === 'open' ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
    } } });
    for (const [ body, end ] of [[ 'commit', 'commit' ], [ 'rollback', 'rollback' ], [ 'open', null ]]) {
      const tx = p.beginTransaction();
      await p.send({ topic, tag: 'TX', body: Buffer.from(body) }, tx);
      if (end === 'commit') await tx.commit();
      if (end === 'rollback') await tx.rollback();
    }
    const c = await simple('*', 5000);
    const got = await receiveUntil(c, 2);
    const extra = await c.receive(32, 15000);
    await c.shutdown();
    await p.shutdown();
    return { received: got.map(m => m.body.toString()).sort(), extra: extra.length, checked };
  },

  // Push consumer: every message consumed once, acked.
  async push() {
    const p = await producer();
    const sent = new Set();
    const fifo = process.env.FIFO === 'true';
    for (let i = 0; i < count; i++) {
      const r = await p.send({ topic, tag: 'P', body: Buffer.from(`push-${i}`), ...(fifo ? { messageGroup: 'order-1' } : {}) });
      sent.add(r.messageId);
    }
    await p.shutdown();
    const seen = [];
    const bodies = [];
    let done;
    const all = new Promise(resolve => { done = resolve; });
    const c = new PushConsumer({ endpoints, namespace: '', consumerGroup: group, logger: quiet,
      subscriptions: new Map([[ topic, '*' ]]), longPollingTimeout: 5000,
      messageListener: { async consume(m) {
        seen.push(m.messageId);
        bodies.push(m.body.toString());
        if (seen.length >= count) done();
        return ConsumeResult.SUCCESS;
      } } });
    await c.startup();
    await Promise.race([ all, new Promise((_, reject) => setTimeout(() => reject(new Error('push consumer timed out')), left())) ]);
    await c.shutdown();
    return { sent: [ ...sent ], seen, bodies };
  },
};

(async () => {
  const fn = scenarios[process.argv[2]];
  if (!fn) throw new Error(`unknown scenario ${process.argv[2]}`);
  const out = await fn();
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
})().catch(e => {
  process.stderr.write(`scenario failed: ${e && e.stack || e}\n`);
  process.exit(1);
});
