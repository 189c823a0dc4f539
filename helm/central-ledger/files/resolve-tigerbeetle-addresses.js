// Init container of the central-ledger Deployment, run with the service image's node:
//
//   TB_REPLICA_ADDRESSES=host:port,... OUTPUT_FILE=/run/tigerbeetle/config.json node resolve-tigerbeetle-addresses.js
//
// TigerBeetle 0.17.9's client accepts only IP addresses ("Invalid replica address" otherwise),
// and the chart's replica addresses are names of per-replica ClusterIP Services (stable for the
// life of the release). This resolves them once, in replica order, and writes a config-module
// file ({"ledger":{"tigerbeetle":{"addresses":[...]}}}) that the service reads via CONFIG_FILE.
// Waits for DNS up to DNS_TIMEOUT_S (300) seconds.
'use strict';
const { lookup } = require('node:dns').promises;
const { renameSync, writeFileSync } = require('node:fs');

const entries = (process.env.TB_REPLICA_ADDRESSES || '').split(',').map((s) => s.trim()).filter((s) => s.length > 0);
const output = process.env.OUTPUT_FILE;
const deadline = Date.now() + Number(process.env.DNS_TIMEOUT_S || 300) * 1000;

async function resolve(entry) {
  const colon = entry.lastIndexOf(':');
  if (colon <= 0) throw new Error(`not host:port: ${entry}`);
  const host = entry.slice(0, colon);
  const port = entry.slice(colon + 1);
  if (host.startsWith('[')) return entry; // an IPv6 literal already
  for (;;) {
    try {
      const { address, family } = await lookup(host);
      return `${family === 6 ? `[${address}]` : address}:${port}`;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`cannot resolve ${host}: ${error.code || error.message}`);
      process.stderr.write(`waiting for DNS name ${host} (${error.code || error.message})\n`);
      await new Promise((done) => setTimeout(done, 2000));
    }
  }
}

async function main() {
  if (entries.length === 0) throw new Error('TB_REPLICA_ADDRESSES is empty');
  if (!output) throw new Error('OUTPUT_FILE is not set');
  const addresses = [];
  for (const entry of entries) addresses.push(await resolve(entry)); // keeps replica order
  writeFileSync(`${output}.tmp`, `${JSON.stringify({ ledger: { tigerbeetle: { addresses } } })}\n`);
  renameSync(`${output}.tmp`, output);
  process.stdout.write(`TigerBeetle replica addresses: ${addresses.join(',')}\n`);
}

main().catch((error) => {
  process.stderr.write(`resolve-tigerbeetle-addresses: ${error.message}\n`);
  process.exit(1);
});
