// The official TypeScript SDK client (@modelcontextprotocol/sdk, the copy
// installed beside server-everything) driving people's /mcp (code mode), for
// web/mcp_code_test.go. It lists the tools, then calls each step in order and
// prints one JSON line per answer.
//
//   node mcp_code_client.mjs <endpoint> <token> '<[{"name": ..., "arguments": {...}}, ...]>'
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const sdk = process.env.SUBAKO_TS_SDK; // .../node_modules/@modelcontextprotocol/sdk
const load = rel => import(pathToFileURL(path.join(sdk, 'dist/esm', rel)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');

const [endpoint, token, steps] = process.argv.slice(2);
const out = v => process.stdout.write(JSON.stringify(v) + '\n');

const client = new Client({ name: 'ts-code-mode', version: '1' });
const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
const { tools } = await client.listTools();
out({ type: 'tools', tools: tools.map(t => t.name) });
for (const step of JSON.parse(steps)) {
  try {
    const r = await client.callTool(step, undefined, { timeout: 120000 });
    out({ type: 'result', name: step.name, isError: !!r.isError, text: r.content?.[0]?.text ?? '', structured: r.structuredContent ?? null,
      resource: r.content?.[0]?.resource ?? null });
  } catch (e) {
    out({ type: 'error', name: step.name, code: e?.code, message: String(e?.message ?? e) });
  }
}
await client.close();
