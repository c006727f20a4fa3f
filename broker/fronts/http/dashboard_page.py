"""The dashboard page served at ``/``: one HTML file with a little plain JavaScript that
polls ``/api/state`` every second and posts the two actions (move the clock, re-drive a
group's dead letters). No framework: it only draws tables."""

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>rocketmq-emulator</title>
<style>
body{font:14px/1.4 -apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.4em} h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px} th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f5f5f5} td.s{text-align:left} button{margin-right:.4em} .muted{color:#777}
#error{color:#b00}
</style></head>
<body>
<h1>rocketmq-emulator</h1>
<p>Clock: <b id="clock">loading…</b> <span id="clock-kind" class="muted"></span></p>
<p id="advance">
  <button data-advance="10s">advance 10 s</button><button data-advance="1m">advance 1 min</button>
  <button data-advance="1h">advance 1 h</button><button data-advance="next">to the next due message</button>
</p>
<p id="error"></p>
<h2>Groups</h2><table id="groups"><tr><td class="s muted">loading…</td></tr></table>
<h2>Waiting for a retry</h2><table id="waiting"><tr><td class="s muted">loading…</td></tr></table>
<h2>Delay queue</h2><table id="delay"><tr><td class="s muted">loading…</td></tr></table>
<h2>Dead letters</h2><table id="dlq"><tr><td class="s muted">loading…</td></tr></table>
<h2>Transactions waiting</h2><table id="half"><tr><td class="s muted">loading…</td></tr></table>
<h2>Topics</h2><table id="topics"><tr><td class="s muted">loading…</td></tr></table>
<h2>Live events</h2><table id="events"><tr><td class="s muted">loading…</td></tr></table>
<script>
const fmt = ms => new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC");
const esc = s => String(s ?? "").replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c]));
function table(id, head, rows) {
  const t = document.getElementById(id);
  t.innerHTML = "<tr>" + head.map(h => "<th>" + h + "</th>").join("") + "</tr>" +
    (rows.length ? rows.map(r => "<tr>" + r.map(c => "<td" + (typeof c === "number" ? "" : " class=s") + ">" +
      c + "</td>").join("") + "</tr>").join("")
     : "<tr><td class=s colspan=" + head.length + "><span class=muted>none</span></td></tr>");
}
async function post(path, body) {
  const r = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const doc = await r.json();
  document.getElementById("error").textContent = r.ok ? "" : doc.error;
  await refresh();
  return doc;
}
let lastSeq = 0, feed = [];
async function events() {
  const fresh = await (await fetch("/api/events?after=" + lastSeq)).json();
  if (fresh.length) { lastSeq = fresh[fresh.length - 1].seq; feed = feed.concat(fresh).slice(-30); }
  // level: the delay level the event is about; a store or a dead letter is about none ("-")
  table("events", ["time", "broker", "event", "topic", "group", "message", "attempt", "level"],
    feed.slice().reverse().map(e => [fmt(e.time_ms), esc(e.broker), esc(e.kind), esc(e.real_topic || e.topic),
      esc(e.group || (e.kind === "redelivered" ? "(delayed send)" : "")), esc(e.msg_id), e.reconsume_times ?? 0,
      e.delay_level ? e.delay_level : "-"]));
}
async function refresh() {
  // the state first: until its first answer the tables say "loading…", not bare headings
  const s = await (await fetch("/api/state")).json();
  await events();
  document.getElementById("clock").textContent = fmt(s.clock.now_ms);
  document.getElementById("clock-kind").textContent = s.clock.virtual ? "(virtual)" : "(real: the buttons need --clock virtual)";
  document.querySelectorAll("#advance button").forEach(b => b.disabled = !s.clock.virtual);
  table("groups", ["group", "lag", "consumed", "through %RETRY%", "dead letters", "retry ladder (level: waiting)"],
    s.groups.map(g => [esc(g.group), g.lag, g.consumed, g.retry_messages, g.dead_letters,
      g.ladder.map(l => "L" + l.level + ": " + l.waiting).join(", ") || "<span class=muted>empty</span>"]));
  table("waiting", ["group", "level", "due", "message", "attempt", "body"],
    s.waiting.map(w => [esc(w.group || "(delayed send)"), w.level, fmt(w.due_ms), esc(w.msg_id), w.reconsume_times,
      esc(w.body)]));
  table("delay", ["level", "delay", "waiting"], s.delay_queue.filter(d => d.waiting).map(d =>
    [d.level, (d.delay_ms / 1000) + " s", d.waiting]));
  const groups = [...new Set(s.dead_letters.filter(d => !d.redriven_as).map(d => d.group))];
  table("dlq", ["group", "message", "offset id (dlq list)", "keys", "topic", "attempts", "died", "state"],
    s.dead_letters.map(d => [esc(d.group), esc(d.msg_id), esc(d.offset_msg_id), esc(d.keys), esc(d.topic),
      d.attempts, fmt(d.died_at_ms),
      d.redriven_as ? "re-driven as " + esc(d.redriven_as) : "dead"]));
  const t = document.getElementById("dlq");
  document.querySelectorAll("button.redrive").forEach(b => b.remove());
  groups.forEach(g => {
    const b = document.createElement("button");
    b.className = "redrive"; b.dataset.group = g; b.textContent = "re-drive " + g;
    b.onclick = () => post("/api/dlq/redrive", {group: g, all: true});
    t.after(b);
  });
  table("half", ["topic", "producer group", "transaction", "checks", "next check"],
    s.half_messages.map(h => [esc(h.topic), esc(h.producer_group), esc(h.transaction_id), h.checks,
      fmt(h.next_check_ms)]));
  table("topics", ["broker", "topic", "messages"], s.topics.map(x => [esc(x.broker), esc(x.topic), x.messages]));
}
document.querySelectorAll("#advance button").forEach(b =>
  b.onclick = () => post("/api/clock/advance", {duration: b.dataset.advance}));
refresh(); setInterval(refresh, 1000);
</script>
</body></html>
"""
