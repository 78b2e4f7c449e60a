// The official TypeScript SDK client (@modelcontextprotocol/sdk, the copy
// installed beside server-everything), without tasks, calling one tool with
// a progress handler and resetTimeoutOnProgress: true (its request timeout
// stays the default 60 s). It prints one JSON line per thing it sees, for the
// Go test that runs it (web/mcp_progress_test.go).
//
//   node mcp_progress_client.mjs <endpoint> <token> call|cancel <tool> <arguments JSON>
//
// call:   call the tool; print each progress notification and the result.
// cancel: call the tool; 2 s after its first progress notification, abort
//         the request (the SDK sends notifications/cancelled), then stay
//         connected a moment so the notification is delivered.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const sdk = process.env.SUBAKO_TS_SDK; // .../node_modules/@modelcontextprotocol/sdk
const load = rel => import(pathToFileURL(path.join(sdk, 'dist/esm', rel)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');

const [endpoint, token, mode, tool, args] = process.argv.slice(2);
const out = v => process.stdout.write(JSON.stringify(v) + '\n');

const client = new Client({ name: 'ts-progress', version: '1.32.2' });
const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
out({ type: 'connected' });

const started = Date.now();
const abort = new AbortController();
let cancelling = null;
try {
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, undefined, {
    resetTimeoutOnProgress: true,
    signal: abort.signal,
    onprogress: p => {
      out({ type: 'progress', at: Date.now() - started, progress: p.progress, total: p.total ?? null, message: p.message ?? null });
      if (mode === 'cancel' && !cancelling) {
        cancelling = setTimeout(() => abort.abort('the user stopped waiting'), 2000);
      }
    },
  });
  out({ type: 'result', at: Date.now() - started, result });
} catch (e) {
  out({ type: 'error', at: Date.now() - started, error: { code: e?.code ?? null, message: String(e?.message ?? e) } });
}
if (mode === 'cancel') {
  await new Promise(r => setTimeout(r, 1000));
  out({ type: 'cancelled' });
}
await client.close();
out({ type: 'done' });
