// Preloaded with `node --require` by runtime/mcpclient/mcptest.
//
// server-everything listens on every interface on $PORT. This makes every
// net.Server listen on 127.0.0.1 instead (port 0 picks a free one), and
// reports the port it got on stderr so the harness needs no guessing.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const cb = typeof args[args.length - 1] === "function" ? args.pop() : undefined;
  const first = args[0];
  if (first !== null && typeof first === "object" && (first.path !== undefined || first.fd !== undefined || first._handle !== undefined)) {
    // Unix sockets and handles are not network listeners: leave them alone.
    return listen.call(this, ...args, ...(cb ? [cb] : []));
  }
  const port = typeof first === "object" && first !== null ? first.port : first;
  this.once("listening", () => {
    process.stderr.write(`subako-mcptest listening ${this.address().port}\n`);
  });
  return listen.call(this, { port: Number(port) || 0, host: "127.0.0.1" }, ...(cb ? [cb] : []));
};
