// Drives two real `swarm node` processes with bee-js, for tests/test_beejs_nodes.py.
//
// Usage: node nodes.cjs URL_OF_WRITER URL_OF_READER INPUT.json  (prints one JSON object)
//
// What a bee-js user does first and most: check the node, upload bytes, a chunk and a
// single-owner chunk at one node and download them at the other, then write feed updates with
// makeFeedWriter at one node and read the latest with makeFeedReader at the other after each, under
// a postage batch made at the writer as a bee-js user makes one.
'use strict'

const fs = require('fs')
const { Bee, PrivateKey, Topic } = require('@ethersphere/bee-js')


// Every read at the reader comes right after the write at the writer returned, with no waiting
// and no retry: a 201 means the data is held by two nodes, and retrieval finds it (issue 25).
async function main() {
  const [writerUrl, readerUrl, inputPath] = process.argv.slice(2)
  const input = JSON.parse(fs.readFileSync(inputPath, 'utf8'))
  const writer = new Bee(writerUrl)
  const reader = new Bee(readerUrl)
  const out = {}
  const BATCH = await writer.createPostageBatch('500000000', 20)

  out.connected = await writer.isConnected()
  out.health = await writer.getHealth()
  out.addresses = (await writer.getNodeAddresses()).overlay.toHex()

  const data = Buffer.from(input.bytes, 'hex')
  const uploaded = await writer.uploadData(BATCH, data)
  out.bytes_reference = uploaded.reference.toHex()
  const back = await reader.downloadData(uploaded.reference)
  out.bytes_back = Buffer.from(back.toUint8Array()).toString('hex')

  const chunk = Buffer.from(input.chunk, 'hex')
  out.chunk_reference = (await writer.uploadChunk(BATCH, chunk)).reference.toHex()
  out.chunk_back = Buffer.from(await reader.downloadChunk(out.chunk_reference)).toString('hex')

  const key = new PrivateKey(input.key)
  const owner = key.publicKey().address()
  await writer.makeSOCWriter(key).upload(BATCH, input.soc_id, Buffer.from(input.soc_payload, 'hex'))
  const soc = await reader.makeSOCReader(owner).download(input.soc_id)
  out.soc_payload = soc.payload.toHex()

  const topic = Topic.fromString(input.topic)
  const feedWriter = writer.makeFeedWriter(topic, key)
  const feedReader = reader.makeFeedReader(topic, owner)
  out.each_latest = []
  let latest = null
  for (const reference of input.references) {
    await feedWriter.upload(BATCH, reference)
    latest = await feedReader.downloadReference()
    out.each_latest.push(latest.feedIndex.toBigInt().toString())
  }
  out.latest = latest
    ? { index: latest.feedIndex.toBigInt().toString(), reference: latest.reference.toHex() }
    : null
  process.stdout.write(JSON.stringify(out))
}

main().catch(error => {
  process.stderr.write(String(error && error.stack ? error.stack : error))
  process.exit(1)
})
