// Computes single-owner chunks and feed updates with bee-js, for tests/test_beejs_vectors.py.
//
// Usage: node vectors.cjs INPUT.json  (prints one JSON object on stdout)
//
// bee-js talks to a Bee node over HTTP; here it talks to a tiny fake node in this process that
// records what bee-js uploads (POST /soc/{owner}/{id}?sig=) and serves the chunks the Python test
// made (GET /chunks/{address}), so both directions are checked with bee-js's own code: what it
// writes (ids, signatures, payload layout) and what it accepts when it reads (it recovers the
// owner from the signature and checks the address).
'use strict'

const fs = require('fs')
const http = require('http')
const { Bee, Identifier, PrivateKey, Topic } = require('@ethersphere/bee-js')

const BATCH = '00'.repeat(32)

function fakeNode(serve, posts) {
  return http.createServer((req, res) => {
    const chunks = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      const url = new URL(req.url, 'http://x')
      const body = Buffer.concat(chunks)
      if (req.method === 'POST' && url.pathname.startsWith('/soc/')) {
        const [, , owner, id] = url.pathname.split('/')
        posts.push({ owner, id, sig: url.searchParams.get('sig'), body: body.toString('hex') })
        res.writeHead(201, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ reference: '00'.repeat(32) }))
      } else if (req.method === 'GET' && url.pathname.startsWith('/chunks/')) {
        const data = serve[url.pathname.split('/')[2]]
        res.writeHead(data ? 200 : 404, { 'content-type': 'application/octet-stream' })
        res.end(data ? Buffer.from(data, 'hex') : undefined)
      } else {
        res.writeHead(404)
        res.end()
      }
    })
  })
}

async function main() {
  const input = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))
  const posts = []
  const server = fakeNode(input.serve, posts)
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const bee = new Bee(`http://127.0.0.1:${server.address().port}`)
  const key = new PrivateKey(input.key)
  const owner = key.publicKey().address()
  const topic = Topic.fromString(input.topic_text)
  const out = { owner: owner.toHex(), topic: topic.toHex(), socs: [], feed_reads: [] }

  for (const { id, payload } of input.socs) {
    const cac = bee.makeContentAddressedChunk(Buffer.from(payload, 'hex'))
    const soc = cac.toSingleOwnerChunk(new Identifier(id), key)
    out.socs.push({ cac: cac.address.toHex(), address: soc.address.toHex(), data: Buffer.from(soc.data).toString('hex') })
  }
  const writer = bee.makeFeedWriter(topic, key)
  for (const { index, reference, at } of input.feed_writes) {
    await writer.upload(BATCH, reference, { index, at })
  }
  for (const { index, payload } of input.feed_payload_writes) {
    await writer.uploadPayload(BATCH, Buffer.from(payload, 'hex'), { index })
  }
  const reader = bee.makeFeedReader(topic, owner)
  for (const { index, kind } of input.feed_reads) {
    const update =
      kind === 'reference' ? await reader.downloadReference({ index }) : await reader.downloadPayload({ index })
    const value = kind === 'reference' ? update.reference : update.payload
    out.feed_reads.push({ index, kind, value: value.toHex(), next: update.feedIndexNext.toHex() })
  }
  const socReader = bee.makeSOCReader(owner)
  out.soc_reads = []
  for (const id of input.soc_reads) {
    const soc = await socReader.download(new Identifier(id))
    out.soc_reads.push({ id, owner: soc.owner.toHex(), span: soc.span.toBigInt().toString(), payload: soc.payload.toHex() })
  }
  out.posts = posts
  server.close()
  process.stdout.write(JSON.stringify(out))
}

main().catch(err => {
  console.error(err)
  process.exit(1)
})
