// bee-js for a web page, bundled by tests/test_beejs_calls.py with esbuild --platform=browser
// as a web app's bundler does (the package's "browser" field picks its browser modules, among
// them the streamFiles its prebuilt index.browser.min.js lacks).
'use strict'
window.BeeJs = require('@ethersphere/bee-js')
