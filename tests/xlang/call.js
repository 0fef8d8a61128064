// Calls engine functions with the plain `nats` npm package, following docs/PROTOCOL.md.
// Usage: node call.js <url> <credentials.json> ; prints one JSON line with the outcomes.
const fs = require("fs");
const { connect, headers } = require("nats");

async function call(nc, id, payload, timeoutMs) {
  const h = headers();
  h.set("Engine-Deadline", String(Date.now() + timeoutMs));
  const subject = "fn." + id.split("::").join(".");
  const body = payload === undefined ? "" : JSON.stringify(payload);
  const msg = await nc.request(subject, body, { timeout: timeoutMs, headers: h });
  const code = msg.headers ? msg.headers.get("Nats-Service-Error-Code") : "";
  const parsed = msg.data.length ? JSON.parse(msg.string()) : null;
  if (code) return { error: parsed.error, status: Number(code) };
  return { ok: parsed };
}

(async () => {
  const [url, credsPath] = process.argv.slice(2);
  const creds = JSON.parse(fs.readFileSync(credsPath, "utf8"));
  const nc = await connect({ servers: url, user: creds.user, pass: creds.password });
  const out = {
    echo: await call(nc, "example::echo", { text: "from node" }, 5000),
    bad: await call(nc, "example::echo", { text: 42 }, 5000),
    fail: await call(nc, "example::fail", { code: "NOT_FOUND", message: "nothing here" }, 5000),
    late: await call(nc, "example::sleep", { seconds: 2 }, 300).catch((e) => ({ timeout: String(e.code || e.message) })),
  };
  console.log(JSON.stringify(out));
  await nc.close();
})().catch((e) => { console.error(e); process.exit(1); });
