// fauxqs on loopback only: its CLI and `startFauxqs` listen on every interface, so its app is built and bound
// here. `node serve.mjs PORT` prints {"address": ...} once it listens, and runs until killed.
import { buildApp } from "fauxqs";

const app = buildApp({ logger: false, host: "127.0.0.1" });
const address = await app.listen({ port: Number(process.argv[2] ?? 0), host: "127.0.0.1" });
console.log(JSON.stringify({ address }));
