// Drives two real `swarm node` processes with bee-js, for tests/test_beejs_nodes.py.
//
// Usage: node nodes.cjs URL_OF_WRITER URL_OF_READER INPUT.json  (prints one JSON object)
//
// What a bee-js user does first and most: check the node, upload and download bytes, upload a
// chunk, then write feed updates with makeFeedWriter at one node and read them back with
// makeFeedReader at another. The postage batch bee-js insists on is a dummy: this network has
// no postage, and the node accepts and ignores it.
'use strict'

const fs = require('fs')
const { Bee, PrivateKey, Topic } = require('@ethersphere/bee-js')

const BATCH = '00'.repeat(32)

// What one node uploads reaches the other by pull sync (no push sync yet): retry a little.
async function eventually(what) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await what()
    } catch (error) {
      if (attempt >= 50) throw error
      await new Promise(resolve => setTimeout(resolve, 200))
    }
  }
}

async function main() {
  const [writerUrl, readerUrl, inputPath] = process.argv.slice(2)
  const input = JSON.parse(fs.readFileSync(inputPath, 'utf8'))
  const writer = new Bee(writerUrl)
  const reader = new Bee(readerUrl)
  const out = {}

  out.connected = await writer.isConnected()
  out.health = await writer.getHealth()
  out.addresses = (await writer.getNodeAddresses()).overlay.toHex()

  const data = Buffer.from(input.bytes, 'hex')
  const uploaded = await writer.uploadData(BATCH, data)
  out.bytes_reference = uploaded.reference.toHex()
  const back = await eventually(() => reader.downloadData(uploaded.reference))
  out.bytes_back = Buffer.from(back.toUint8Array()).toString('hex')

  const chunk = Buffer.from(input.chunk, 'hex')
  out.chunk_reference = (await writer.uploadChunk(BATCH, chunk)).reference.toHex()

  const key = new PrivateKey(input.key)
  const topic = Topic.fromString(input.topic)
  const feedWriter = writer.makeFeedWriter(topic, key)
  for (const reference of input.references) {
    await feedWriter.upload(BATCH, reference)
  }
  const feedReader = reader.makeFeedReader(topic, key.publicKey().address())
  const last = BigInt(input.references.length - 1)
  const latest = await eventually(async () => {
    const update = await feedReader.downloadReference()
    if (update.feedIndex.toBigInt() !== last) throw new Error(`latest index ${update.feedIndex.toBigInt()}`)
    return update
  })
  out.latest = latest
    ? { index: latest.feedIndex.toBigInt().toString(), reference: latest.reference.toHex() }
    : null
  process.stdout.write(JSON.stringify(out))
}

main().catch(error => {
  process.stderr.write(String(error && error.stack ? error.stack : error))
  process.exit(1)
})
