// Encrypted uploads through bee-js 12.1.0 across two real nodes, for tests/test_beejs_encrypted.py.
//
// Usage: node encrypted.cjs URL_OF_WRITER URL_OF_READER  (prints one JSON object)
// Each payload is uploaded with {encrypt: true} at the writer and downloaded by bee-js at the
// reader (which retrieves the encrypted chunks from the writer and decrypts them).
'use strict'

const { Bee } = require('@ethersphere/bee-js')

async function main() {
  const [writerUrl, readerUrl] = process.argv.slice(2)
  const writer = new Bee(writerUrl)
  const reader = new Bee(readerUrl)
  const batch = await writer.createPostageBatch('500000000', 20)
  const out = {}
  // one chunk; three chunks under one intermediate; 70 chunks, two levels of 64-reference chunks
  for (const size of [5, 10000, 70 * 4096 + 17]) {
    const payload = Buffer.alloc(size)
    for (let i = 0; i < size; i++) payload[i] = (i * 31 + 7) % 251
    const made = await writer.uploadData(batch, payload, { encrypt: true })
    const back = Buffer.from((await reader.downloadData(made.reference)).toUint8Array())
    out[size] = { reference: made.reference.toHex(), same: back.equals(payload) }
  }
  // a file under an encrypted manifest: uploadFile at the writer, downloadFile at the reader
  const file = await writer.uploadFile(batch, Buffer.from('encrypted notes'), 'notes.txt', { encrypt: true, contentType: 'text/plain' })
  const got = await reader.downloadFile(file.reference)
  out.file = { reference: file.reference.toHex(), name: got.name, contentType: got.contentType, text: got.data.toUtf8() }
  // access control: the reader's node is granted; the writer uploads under that history
  const writerKey = (await writer.getNodeAddresses()).publicKey
  const readerKey = (await reader.getNodeAddresses()).publicKey
  const granted = await writer.createGrantees(batch, [readerKey])
  const secret = Buffer.from('for the reader only')
  const shared = await writer.uploadData(batch, secret, { act: true, actHistoryAddress: granted.historyref })
  const history = shared.historyAddress.getOrThrow()
  const opened = await reader.downloadData(shared.reference, { actPublisher: writerKey, actHistoryAddress: history })
  let withoutAct
  try {
    withoutAct = Buffer.from((await reader.downloadData(shared.reference)).toUint8Array()).equals(secret)
  } catch (error) {
    withoutAct = String(error.message)
  }
  // a file under a manifest, with the same access control (POST /bzz, GET /bzz/...)
  const sharedFile = await writer.uploadFile(batch, Buffer.from('a file for the reader'), 'shared.txt', {
    act: true, actHistoryAddress: granted.historyref, contentType: 'text/plain',
  })
  const openedFile = await reader.downloadFile(sharedFile.reference, '', {
    actPublisher: writerKey, actHistoryAddress: sharedFile.historyAddress.getOrThrow(),
  })
  out.act = {
    history: history.toHex() === granted.historyref.toHex(),
    same: Buffer.from(opened.toUint8Array()).equals(secret),
    withoutAct,
    file: { name: openedFile.name, text: openedFile.data.toUtf8() },
  }
  process.stdout.write(JSON.stringify(out))
}

main().catch(error => {
  process.stderr.write(String(error && error.stack ? error.stack : error))
  process.exit(1)
})
