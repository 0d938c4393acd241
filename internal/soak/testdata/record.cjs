// Preloaded into server-everything (node --require record.cjs) by the soak
// test: it appends every byte the server reads on stdin to
// $SOAK_RECORD_DIR/<SOAK_SERVER_ID>.<pid>.log, before the server's own
// handler sees it, so that the test can see what reached a server from
// outside conduit. It writes nothing to stdout and changes nothing the
// server reads.
'use strict';
const fs = require('fs');
const path = require('path');
const dir = process.env.SOAK_RECORD_DIR;
if (dir) {
  const name = (process.env.SOAK_SERVER_ID || 'server') + '.' + process.pid + '.log';
  const fd = fs.openSync(path.join(dir, name), 'a');
  const stdin = process.stdin;
  const emit = stdin.emit;
  stdin.emit = function (event, ...args) {
    if (event === 'data' && args.length > 0) {
      fs.writeSync(fd, typeof args[0] === 'string' ? Buffer.from(args[0]) : args[0]);
    }
    return emit.call(this, event, ...args);
  };
}
