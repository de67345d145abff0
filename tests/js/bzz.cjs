// bee-js's file, collection and feed-manifest calls across two real `swarm node` processes,
// for tests/test_bzz_process.py.
//
// Usage: node bzz.cjs URL_OF_WRITER URL_OF_READER INPUT.json  (prints one JSON object)
//
// Each upload is made at the writer and read back at the reader right after it returns.
'use strict'

const fs = require('fs')
const { Bee, PrivateKey, Topic } = require('@ethersphere/bee-js')

const text = file => Buffer.from(file.data.toUint8Array()).toString('utf8')

async function main() {
  const [writerUrl, readerUrl, inputPath] = process.argv.slice(2)
  const input = JSON.parse(fs.readFileSync(inputPath, 'utf8'))
  const writer = new Bee(writerUrl)
  const reader = new Bee(readerUrl)
  const out = {}
  const BATCH = await writer.createPostageBatch('500000000', 20) // as a bee-js user makes one

  const file = await writer.uploadFile(BATCH, input.file_text, 'hello.txt', { contentType: 'text/plain' })
  out.file_reference = file.reference.toHex()
  const back = await reader.downloadFile(file.reference)
  out.file = { name: back.name, contentType: back.contentType, text: text(back) }

  const dir = await writer.uploadFilesFromDirectory(BATCH, input.directory, { indexDocument: 'index.html' })
  out.directory_reference = dir.reference.toHex()
  out.directory_files = {}
  for (const path of input.directory_paths) {
    const got = await reader.downloadFile(dir.reference, path)
    out.directory_files[path] = { name: got.name, contentType: got.contentType, text: text(got) }
  }
  out.directory_index = text(await reader.downloadFile(dir.reference))

  const collection = input.collection.map(([path, data]) => ({ path, size: data.length, file: new File([data], path) }))
  const uploaded = await writer.uploadCollection(BATCH, collection, { errorDocument: 'missing.html' })
  out.collection_reference = uploaded.reference.toHex()
  out.collection_missing = text(await reader.downloadFile(uploaded.reference, 'no/such/path'))

  // uploadFiles takes browser File objects; Node 20 has them
  const files = input.collection.map(([path, data]) => new File([data], path, { type: 'text/plain' }))
  const many = await writer.uploadFiles(BATCH, files)
  out.files_reference = many.reference.toHex()
  out.files_first = text(await reader.downloadFile(many.reference, input.collection[0][0]))

  const key = new PrivateKey(input.key)
  const topic = Topic.fromString(input.topic)
  const owner = key.publicKey().address()
  const manifest = await writer.createFeedManifest(BATCH, topic, owner)
  out.feed_manifest = manifest.toHex()
  const feedWriter = writer.makeFeedWriter(topic, key)
  out.feed_pages = []
  for (const reference of [file.reference, dir.reference]) {
    await feedWriter.upload(BATCH, reference)
    out.feed_pages.push(text(await reader.downloadFile(manifest)))
  }
  process.stdout.write(JSON.stringify(out))
}

main().catch(error => {
  process.stderr.write(String(error && error.stack ? error.stack : error))
  process.exit(1)
})
