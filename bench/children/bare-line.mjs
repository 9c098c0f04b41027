// Cold-start baseline: bare node writing one line, nothing imported.
process.stdout.write('{"type":"hello","protocol":1}\n');
