// A vscode-jsonrpc (v8, the LSP stack) stdio server with one request handler, written as its users
// write one: "echo" returns its parameters, like the ears host's echo capability. vscode-jsonrpc frames
// messages with Content-Length headers (LSP base protocol), not NDJSON.
import rpc from "vscode-jsonrpc/node.js";
import { reportPeakRss } from "./peak-rss.mjs";

reportPeakRss();
const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(process.stdin), new rpc.StreamMessageWriter(process.stdout));
connection.onRequest("echo", (params) => params);
connection.listen();
