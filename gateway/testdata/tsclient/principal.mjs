// One principal's client of conduit serve, written with the official
// TypeScript SDK, for the test of two principals at once:
//
//   node principal.mjs URL   Streamable HTTP, the bearer token in CONDUIT_TOKEN
//
// It calls gh__whoami and kid__whoami 20 times each, all at once, adds a
// note (a resource of its own session at the server), lists the resources
// it is offered, and tries to read the URI in OTHER_URI (another
// principal's note) when it is set. It prints what it saw as JSON and
// exits 0, or prints why it failed and exits 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.argv[2];
const headers = { Authorization: `Bearer ${process.env.CONDUIT_TOKEN}` };
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const client = new Client({ name: "ts-sdk-principal", version: "1.0.0" });
const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

try {
  await client.connect(transport);
  const seen = { protocol: transport.protocolVersion ?? "", gh: [], kid: [] };
  const calls = [];
  for (let i = 0; i < 20; i++) {
    calls.push(client.callTool({ name: "gh__whoami", arguments: {} }).then((r) => seen.gh.push(text(r))));
    calls.push(client.callTool({ name: "kid__whoami", arguments: {} }).then((r) => seen.kid.push(text(r))));
  }
  await Promise.all(calls);
  seen.note = text(await client.callTool({ name: "gh__note", arguments: { text: `${process.env.CONDUIT_TOKEN} secret` } }));
  const deadline = Date.now() + 20000;
  do {
    seen.resources = (await client.listResources()).resources.map((r) => r.uri);
    if (seen.resources.includes(seen.note)) break;
    await new Promise((r) => setTimeout(r, 20));
  } while (Date.now() < deadline);
  if (process.env.OTHER_URI) {
    try {
      const rr = await client.readResource({ uri: process.env.OTHER_URI });
      seen.other = rr.contents.map((c) => c.text ?? "").join("");
    } catch (e) {
      seen.otherError = String(e.message ?? e);
    }
  }
  console.log(JSON.stringify(seen));
  await client.close();
  process.exit(0);
} catch (e) {
  console.error(e);
  process.exit(1);
}
