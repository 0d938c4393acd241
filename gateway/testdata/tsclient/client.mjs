// A client of conduit serve written with the official TypeScript SDK:
//
//   node client.mjs stdio COMMAND [ARG...]   starts COMMAND and speaks MCP over its stdio
//   node client.mjs http URL                 Streamable HTTP, with the bearer token in CONDUIT_TOKEN
//
// The gateway in front of server-everything has this policy: get-env is
// denied, get-sum asks, get-tiny-image is denied once the session is
// tainted by everything, the rest is allowed. The client lists, calls an
// allowed tool, is refused the denied one, sees list_changed when the taint
// takes get-tiny-image away, answers the elicitation get-sum causes, and
// receives the progress of a long-running operation. It prints what it saw
// as JSON and exits 0, or prints why it failed and exits 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env, stderr: "inherit" });
} else if (mode === "http") {
  const headers = { Authorization: `Bearer ${process.env.CONDUIT_TOKEN}` };
  transport = new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit: { headers } });
} else {
  console.error("usage: client.mjs stdio COMMAND [ARG...] | http URL");
  process.exit(2);
}

const seen = { listChanged: 0, elicitations: [], progress: [] };
const client = new Client({ name: "ts-sdk-client", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  seen.listChanged++;
});
client.setRequestHandler(ElicitRequestSchema, (req) => {
  seen.elicitations.push(req.params.message);
  return { action: "accept", content: {} };
});

function check(cond, what) {
  if (!cond) throw new Error(what);
}

const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();

async function waitFor(cond, what) {
  const deadline = Date.now() + 20000;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

try {
  await client.connect(transport);
  seen.server = client.getServerVersion();
  seen.tools = await names();
  check(seen.tools.includes("everything__echo"), "everything__echo is listed");
  check(seen.tools.includes("everything__get-tiny-image"), "everything__get-tiny-image is listed before the taint");
  check(!seen.tools.includes("everything__get-env"), "everything__get-env, which the policy denies, is not listed");

  const changedBefore = seen.listChanged;
  const echo = await client.callTool({ name: "everything__echo", arguments: { message: "hello" } });
  seen.echo = text(echo);
  check(!echo.isError && seen.echo === "Echo: hello", `echo answered ${JSON.stringify(echo)}`);

  try {
    const env = await client.callTool({ name: "everything__get-env", arguments: {} });
    seen.denied = { isError: env.isError === true, text: text(env) };
  } catch (e) {
    seen.denied = { error: String(e.message ?? e) };
  }
  check(seen.denied.error || seen.denied.isError, "the call to everything__get-env was refused");

  // The echo's result tainted the session: get-tiny-image leaves its list.
  // (server-everything changes its own list after initialize too, so
  // the notification alone does not say the taint was applied.)
  await waitFor(async () => {
    seen.toolsAfterTaint = await names();
    return seen.listChanged > changedBefore && !seen.toolsAfterTaint.includes("everything__get-tiny-image");
  }, "notifications/tools/list_changed, and everything__get-tiny-image gone, after the taint");

  const sum = await client.callTool({ name: "everything__get-sum", arguments: { a: 1, b: 2 } });
  seen.sum = text(sum);
  check(!sum.isError && seen.sum.includes("3"), `get-sum answered ${JSON.stringify(sum)}`);
  check(seen.elicitations.length === 1 && seen.elicitations[0].includes("everything__get-sum"), "one approval request naming everything__get-sum");

  const long = await client.callTool(
    { name: "everything__trigger-long-running-operation", arguments: { duration: 1, steps: 4 } },
    undefined,
    { onprogress: (p) => seen.progress.push(p.progress) },
  );
  seen.long = text(long);
  check(!long.isError, `the long-running operation answered ${JSON.stringify(long)}`);
  // The last notification may come after the result.
  check(seen.progress.length >= 3, `progress notifications: ${JSON.stringify(seen.progress)}`);

  await client.close();
  console.log(JSON.stringify(seen));
  process.exit(0);
} catch (e) {
  console.error(`ts client: ${e.stack ?? e}`);
  console.error(`ts client saw: ${JSON.stringify(seen)}`);
  process.exit(1);
}
