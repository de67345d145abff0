// bee-js's own MantarayNode against ours, for tests/test_manifest_beejs.py (no node needed).
//
// Usage: node mantaray.cjs INPUT.json  (prints one JSON object)
//
// INPUT: {"trees": [[[pathHex, referenceHex, metadata|null], ...], ...],
//         "ours": [{"root": hex, "nodes": {referenceHex: dataHex}}, ...]}
// For each tree bee-js adds the entries in the given order and reports its root reference and
// the bytes of every node; for each of ours it reads the nodes back (unmarshal, loadRecursively)
// and reports every path with its reference and metadata.
'use strict'

const fs = require('fs')
const { MantarayNode } = require('@ethersphere/bee-js')

const hex = bytes => Buffer.from(bytes).toString('hex')
const unhex = text => new Uint8Array(Buffer.from(text, 'hex'))

async function build(entries) {
  const root = new MantarayNode()
  for (const [path, reference, metadata] of entries) {
    root.addFork(unhex(path), reference, metadata || undefined)
  }
  const reference = (await root.calculateSelfAddress()).toHex()
  const nodes = {}
  const visit = async (node, address) => {
    nodes[address] = hex(await node.marshal())
    for (const fork of node.forks.values()) {
      await visit(fork.node, hex(fork.node.selfAddress))
    }
  }
  await visit(root, reference)
  return { reference, nodes }
}

async function read({ root, nodes }) {
  const bee = { downloadData: async reference => ({ toUint8Array: () => unhex(nodes[reference.toHex()]) }) }
  const node = MantarayNode.unmarshalFromData(unhex(nodes[root]), unhex(root))
  await node.loadRecursively(bee)
  const paths = {}
  const all = []
  const gather = n => {
    for (const fork of n.forks.values()) {
      all.push(fork.node)
      gather(fork.node)
    }
  }
  gather(node)
  for (const n of all) {
    const target = hex(n.targetAddress)
    if (target !== '00'.repeat(32) || n.metadata) {
      paths[hex(n.fullPath)] = [target, n.metadata || null]
    }
  }
  return { paths, docs: node.getDocsMetadata() }
}

async function main() {
  const input = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))
  const out = { built: [], read: [] }
  for (const entries of input.trees) out.built.push(await build(entries))
  for (const manifest of input.ours) out.read.push(await read(manifest))
  process.stdout.write(JSON.stringify(out))
}

main().catch(error => {
  process.stderr.write(String(error && error.stack ? error.stack : error))
  process.exit(1)
})
