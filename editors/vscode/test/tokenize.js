// Tokenises programs with the TextMate engine VS Code uses (vscode-textmate over the
// Oniguruma regex engine compiled to WebAssembly), for tests/test_vscode_grammar.py.
// Reads {"grammar": PATH, "texts": [TEXT, ...]} on stdin; writes, for each text, each
// line's tokens as [start, end, [scope, ...]] (UTF-16 offsets within the line).
"use strict";
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

async function main() {
  const request = JSON.parse(fs.readFileSync(0, "utf8"));
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async () =>
      vsctm.parseRawGrammar(fs.readFileSync(request.grammar, "utf8"), request.grammar),
  });
  const grammar = await registry.loadGrammar("source.cgraph");
  const result = request.texts.map((text) => {
    let stack = vsctm.INITIAL;
    return text.split(/\r\n|\r|\n/).map((line) => {
      const found = grammar.tokenizeLine(line, stack);
      stack = found.ruleStack;
      return found.tokens.map((t) => [t.startIndex, t.endIndex, t.scopes]);
    });
  });
  process.stdout.write(JSON.stringify(result));
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
