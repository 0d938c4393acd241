// A client of MCP 2025-11-25 written with the official TypeScript SDK,
// talking to the fleet through HAProxy (see fleet_test.go):
//
//   node sticky.mjs URL PREFIX    the bearer token in CONDUIT_TOKEN
//
// Its session lives in the replica that opened it: every request after
// initialize names it (Mcp-Session-Id) and HAProxy must send it there. It
// lists, calls fs__write ten times (ids PREFIX-0..9), calls fs__approve
// (PREFIX-approve), whose "ask" rule is an elicitation request on the
// session that it accepts, lists again, and prints what it saw as JSON
// (exit 0), or why it failed (exit 1).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, prefix] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${process.env.CONDUIT_TOKEN}` };
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
const seen = { writes: [], elicitations: [] };
const client = new Client({ name: "ts-fleet-client", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, (req) => {
  seen.elicitations.push(req.params.message);
  return { action: "accept", content: {} };
});
const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();

try {
  await client.connect(transport);
  seen.protocolVersion = transport.protocolVersion;
  seen.sessionId = transport.sessionId;
  seen.tools = await names();
  for (let i = 0; i < 10; i++) {
    const res = await client.callTool({ name: "fs__write", arguments: { id: `${prefix}-${i}` } });
    seen.writes.push(res.isError ? `error: ${text(res)}` : text(res));
  }
  const res = await client.callTool({ name: "fs__approve", arguments: { id: `${prefix}-approve` } });
  seen.approve = res.isError ? `error: ${text(res)}` : text(res);
  seen.toolsAgain = await names();
  await client.close();
  console.log(JSON.stringify(seen));
  process.exit(0);
} catch (e) {
  console.error(`ts client: ${e.stack ?? e}`);
  console.error(`ts client saw: ${JSON.stringify(seen)}`);
  process.exit(1);
}
