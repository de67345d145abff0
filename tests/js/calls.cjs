// Runs bee-js 12.1.0's storage and messaging calls against two real nodes, for tests/test_beejs_calls.py.
//
// Usage: node calls.cjs URL_OF_WRITER URL_OF_READER DIR  (prints one JSON object: call name -> outcome)
// DIR holds site/ (a directory to upload) and paths.json (its files' paths).
//
// Each call is made as a bee-js user makes it: writes at the writer, reads at the reader right
// after. An outcome is {"ok": true, "value": ...} or {"ok": false, "error": message}; the test
// compares them with docs/bee-compat.md's table.
'use strict'

const { Bee, PrivateKey, Topic, Identifier, Signature } = require('@ethersphere/bee-js')

const out = {}
async function run(name, fn) {
  try {
    const value = await fn()
    out[name] = { ok: true, value: value === undefined ? null : value }
  } catch (error) {
    out[name] = { ok: false, error: String((error && error.message) || error) }
  }
}
const hex = bytes => Buffer.from(bytes.toUint8Array ? bytes.toUint8Array() : bytes).toString('hex')
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// Send until the subscriber has it (a message sent before the subscription reached the writer is
// not kept, in Bee as here), at most `tries` times.
async function sendUntil(received, send, tries = 40) {
  for (let i = 0; i < tries && !received(); i++) {
    await send()
    await sleep(250)
  }
  if (!received()) throw new Error('nothing arrived')
}

async function main() {
  const [writerUrl, readerUrl, dir] = process.argv.slice(2)
  const writer = new Bee(writerUrl)
  const reader = new Bee(readerUrl)
  let batch = null
  let data = null
  const payload = Buffer.from('bee-js across two swarmpy nodes '.repeat(300)) // 3 chunks

  // -- node status
  await run('checkConnection', () => writer.checkConnection())
  await run('isConnected', () => writer.isConnected())
  await run('isGateway', () => writer.isGateway())
  await run('getHealth', async () => (await writer.getHealth()).status)
  await run('getReadiness', () => writer.getReadiness())
  await run('getVersions', async () => (await writer.getVersions()).beeApiVersion)
  await run('isSupportedExactVersion', () => writer.isSupportedExactVersion())
  await run('isSupportedApiVersion', () => writer.isSupportedApiVersion())
  await run('getNodeInfo', async () => (await writer.getNodeInfo()).beeMode)
  await run('getNodeAddresses', async () => (await writer.getNodeAddresses()).overlay.toHex())
  await run('getStatus', async () => (await writer.getStatus()).connectedPeers)
  await run('getPeers', async () => (await writer.getPeers()).length)
  await run('getTopology', async () => {
    const t = await writer.getTopology()
    return { reachability: t.reachability, networkAvailability: t.networkAvailability, connected: t.connected }
  })
  await run('getChainState', async () => (await writer.getChainState()).currentPrice)

  // -- postage
  await run('createPostageBatch', async () => {
    batch = await writer.createPostageBatch('500000000', 20)
    return batch.toHex()
  })
  await run('getPostageBatch', async () => (await writer.getPostageBatch(batch)).usable)
  await run('getAllPostageBatch', async () => (await writer.getAllPostageBatch()).length)
  await run('getPostageBatches', async () => (await writer.getPostageBatches()).length)
  await run('getAllGlobalPostageBatch', async () => (await writer.getAllGlobalPostageBatch()).length)
  await run('getGlobalPostageBatches', async () => (await writer.getGlobalPostageBatches()).length)
  await run('topUpBatch', async () => {
    await writer.topUpBatch(batch, '1000')
    return (await writer.getPostageBatch(batch)).amount
  })
  await run('diluteBatch', async () => {
    await writer.diluteBatch(batch, 21)
    return (await writer.getPostageBatch(batch)).depth
  })
  await run('getStorageCost', async () => (await writer.getStorageCost(
    require('@ethersphere/bee-js').Size.fromGigabytes(1), require('@ethersphere/bee-js').Duration.fromDays(1))).toPLURString())

  // -- bytes and chunks: written at one node, read at the other
  await run('uploadData', async () => {
    data = await writer.uploadData(batch, payload)
    return data.reference.toHex()
  })
  await run('downloadData', async () => Buffer.from((await reader.downloadData(data.reference)).toUint8Array()).equals(payload))
  await run('probeData', async () => (await reader.probeData(data.reference)).contentLength)
  await run('downloadReadableData', async () => {
    const stream = await reader.downloadReadableData(data.reference)
    const parts = []
    for await (const part of stream) parts.push(Buffer.from(part))
    return Buffer.concat(parts).equals(payload)
  })
  await run('getPostageBatchBuckets', async () => {
    const b = await writer.getPostageBatchBuckets(batch)
    return { upper: b.bucketUpperBound, used: b.buckets.reduce((n, x) => n + x.collisions, 0) }
  })
  const chunk = Buffer.concat([Buffer.from([5, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('hello')])
  await run('uploadChunk', async () => (await writer.uploadChunk(batch, chunk)).reference.toHex())
  await run('downloadChunk', async () => hex(await reader.downloadChunk(out.uploadChunk.value)))

  // -- tags
  let tag = null
  await run('createTag', async () => {
    tag = await writer.createTag()
    return Object.keys(tag).sort()
  })
  await run('retrieveTag', async () => (await writer.retrieveTag(tag.uid)).seen)
  await run('updateTag', () => writer.updateTag(tag.uid, data.reference))
  await run('getAllTags', async () => (await writer.getAllTags({ limit: 1000 })).map(t => t.uid).includes(tag.uid))
  await run('deleteTag', async () => {
    await writer.deleteTag(tag.uid)
    return (await writer.getAllTags({ limit: 1000 })).map(t => t.uid).includes(tag.uid)
  })

  // -- pins and stewardship
  await run('pin', () => reader.pin(data.reference))
  await run('getPin', async () => (await reader.getPin(data.reference)).reference.toHex())
  await run('getAllPins', async () => (await reader.getAllPins()).map(r => r.toHex()))
  await run('unpin', () => reader.unpin(data.reference))
  await run('isReferenceRetrievable', () => reader.isReferenceRetrievable(data.reference))
  await run('reuploadPinnedData', () => writer.reuploadPinnedData(batch, data.reference))

  // -- single-owner chunks and feeds
  const key = new PrivateKey('634fb5a872396d9693e5c9f9d7233cfa93f395c093371017ff44aa9ae6564cdd')
  const owner = key.publicKey().address()
  const id = new Identifier('ab'.repeat(32))
  await run('makeSOCWriter', async () => {
    await writer.makeSOCWriter(key).upload(batch, id, Buffer.from('a single-owner chunk'))
    return true
  })
  await run('makeSOCReader', async () => (await reader.makeSOCReader(owner).download(id)).payload.toUtf8())
  const topic = Topic.fromString('bee-js calls')
  await run('makeFeedWriter', async () => {
    await writer.makeFeedWriter(topic, key).upload(batch, data.reference)
    return true
  })
  await run('makeFeedReader', async () => (await reader.makeFeedReader(topic, owner).downloadReference()).reference.toHex())
  await run('fetchLatestFeedUpdate', async () => (await reader.fetchLatestFeedUpdate(topic, owner)).feedIndex.toBigInt().toString())
  await run('isFeedRetrievable', () => reader.isFeedRetrievable(owner, topic))

  // -- PSS: subscribed at the reader, sent at the writer to the reader's neighbourhood (its
  // overlay's first byte) and sealed for its key; a message to another neighbourhood is not handed on
  const pssTopic = Topic.fromString('bee-js pss')
  const readerAddresses = await reader.getNodeAddresses()
  const pssTarget = readerAddresses.overlay.toHex().slice(0, 2)
  const elsewhere = ((parseInt(pssTarget, 16) ^ 0x80).toString(16)).padStart(2, '0')
  const pssKey = readerAddresses.pssPublicKey
  await run('pssSubscribe', async () => {
    const got = []
    const subscription = reader.pssSubscribe(pssTopic, {
      onMessage: message => got.push(message.toUtf8()),
      onError: () => {},
      onClose: () => {},
    })
    await sleep(500)
    try {
      await sendUntil(() => got.length > 0, async () => {
        await writer.pssSend(batch, pssTopic, elsewhere, 'not for the reader')
        await writer.pssSend(batch, pssTopic, pssTarget, 'hello over pss', pssKey)
      })
    } finally {
      subscription.cancel()
    }
    return got
  })
  await run('pssSend', () => writer.pssSend(batch, pssTopic, pssTarget, 'sent', pssKey))
  await run('pssReceive', async () => {
    const received = reader.pssReceive(pssTopic, 20000)
    await sleep(500)
    let done = false
    received.then(() => { done = true }, () => { done = true })
    await sendUntil(() => done, () => writer.pssSend(batch, pssTopic, pssTarget, 'received once'))
    return (await received).toUtf8()
  })

  // -- GSOC: listened to at the reader, written at the writer (two messages at one address)
  const readerOverlay = (await reader.getNodeAddresses()).overlay
  const gsocId = new Identifier('cd'.repeat(32))
  let gsocKey = null
  await run('gsocMine', () => {
    gsocKey = writer.gsocMine(readerOverlay, gsocId, 4)
    return gsocKey.publicKey().address().toHex()
  })
  await run('gsocSubscribe', async () => {
    const got = []
    const subscription = reader.gsocSubscribe(gsocKey.publicKey().address(), gsocId, {
      onMessage: message => got.push(message.toUtf8()),
      onError: () => {},
      onClose: () => {},
    })
    await sleep(500)
    try {
      await sendUntil(() => got.length > 0, () => writer.gsocSend(batch, gsocKey, gsocId, 'first'))
      await sendUntil(() => got.includes('second'), () => writer.gsocSend(batch, gsocKey, gsocId, 'second'))
    } finally {
      subscription.cancel()
    }
    return [...new Set(got)]
  })
  await run('gsocSend', async () => (await writer.gsocSend(batch, gsocKey, gsocId, 'third')).reference.toHex())

  // -- files, directories and manifests (/bzz): written at the writer, read at the reader
  const fileText = file => Buffer.from(file.data.toUint8Array()).toString('utf8')
  let file = null
  await run('uploadFile', async () => {
    file = await writer.uploadFile(batch, payload, 'a.txt', { contentType: 'text/plain' })
    return file.reference.toHex()
  })
  await run('downloadFile', async () => {
    const got = await reader.downloadFile(file.reference)
    return { name: got.name, contentType: got.contentType, same: Buffer.from(got.data.toUint8Array()).equals(payload) }
  })
  await run('downloadReadableFile', async () => {
    const got = await reader.downloadReadableFile(file.reference)
    const parts = []
    for await (const part of got.data) parts.push(Buffer.from(part))
    return { name: got.name, same: Buffer.concat(parts).equals(payload) }
  })
  const readBack = async (reference, paths) => {
    const texts = {}
    for (const path of paths) texts[path] = fileText(await reader.downloadFile(reference, path))
    return texts
  }
  await run('uploadFiles', async () => {
    const files = [new File(['first file'], 'one.txt'), new File(['second file'], 'two.html')]
    const made = await writer.uploadFiles(batch, files)
    return readBack(made.reference, ['one.txt', 'two.html'])
  })
  const paths = JSON.parse(require('fs').readFileSync(`${dir}/paths.json`, 'utf8'))
  const site = `${dir}/site`
  // streamed first: its chunks, zero-padded to 4096 bytes by bee-js, are the ones the nodes keep
  await run('streamDirectory', async () => {
    const made = await writer.streamDirectory(batch, site, undefined, { indexDocument: 'index.html' })
    return { reference: made.reference.toHex(), files: await readBack(made.reference, [...paths, '']) }
  })
  await run('uploadFilesFromDirectory', async () => {
    const made = await writer.uploadFilesFromDirectory(batch, site)
    return { reference: made.reference.toHex(), files: await readBack(made.reference, paths) }
  })
  await run('hashDirectory', async () => (await writer.hashDirectory(site)).toHex())
  await run('uploadCollection', async () => {
    const collection = [['a.txt', 'first'], ['b/c.txt', 'second'], ['missing.html', 'sorry']]
      .map(([path, text]) => ({ path, size: text.length, file: new File([text], path) }))
    const made = await writer.uploadCollection(batch, collection, { errorDocument: 'missing.html' })
    return readBack(made.reference, ['b/c.txt', 'no/such/path'])
  })
  // bee-js's Node.js build refuses; the test makes this call again in headless Chromium
  await run('streamFiles', () => writer.streamFiles(batch, [new File(['x'], 'x.txt')]))
  await run('createFeedManifest', async () => {
    const manifest = await writer.createFeedManifest(batch, topic, owner)
    await writer.makeFeedWriter(topic, key).upload(batch, file.reference) // the feed now names the file
    return { reference: manifest.toHex(), same: Buffer.from((await reader.downloadFile(manifest)).data.toUint8Array()).equals(payload) }
  })

  // -- access control: the writer's grantee lists (only the publisher reads them, as in Bee)
  const other = new PrivateKey('22'.repeat(32))
  let grantees = null
  await run('createGrantees', async () => {
    grantees = await writer.createGrantees(batch, [key.publicKey()])
    return { status: grantees.status, ref: grantees.ref.toHex().length, historyref: grantees.historyref.toHex().length }
  })
  await run('getGrantees', async () => (await writer.getGrantees(grantees.ref)).grantees.map(k => k.toCompressedHex()))
  await run('patchGrantees', async () => {
    const patched = await writer.patchGrantees(batch, grantees.ref, grantees.historyref, { add: [other.publicKey()], revoke: [key.publicKey()] })
    return { status: patched.status, grantees: (await writer.getGrantees(patched.ref)).grantees.map(k => k.toCompressedHex()) }
  })

  // -- absent or node-status calls: recorded, judged by the test
  await run('createEnvelope', async () => {
    const envelope = await writer.createEnvelope(batch, out.uploadChunk.value)
    const signed = Buffer.concat([Buffer.from(out.uploadChunk.value, 'hex'), Buffer.from(envelope.batchId.toUint8Array()), envelope.index, envelope.timestamp])
    const ethereum = (await writer.getNodeAddresses()).ethereum
    return {
      issuer: hex(envelope.issuer),
      index: hex(envelope.index),
      timestamp: hex(envelope.timestamp),
      signature: hex(envelope.signature),
      verified: new Signature(envelope.signature).isValid(signed, ethereum), // by bee-js itself
    }
  })
  await run('rchash', () => writer.rchash(4, '00', '11'))
  await run('getReserveState', () => writer.getReserveState())
  await run('getBlocklist', () => writer.getBlocklist())
  await run('pingPeer', async () => writer.pingPeer(readerOverlay))
  await run('removePeer', async () => writer.removePeer(readerOverlay)) // last: the peer goes away

  process.stdout.write(JSON.stringify(out))
}

main().catch(error => {
  process.stderr.write(String(error && error.stack ? error.stack : error))
  process.exit(1)
})
