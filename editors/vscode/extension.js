// The cgraph extension: the language (.cg files, highlighting by syntaxes/cgraph.tmLanguage.json)
// and a client that starts the language server, `cgraph lsp`, on stdin and stdout.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function makeClient() {
  const settings = vscode.workspace.getConfiguration("cgraph");
  const server = {
    command: settings.get("server.path", "cgraph"),
    args: settings.get("server.args", ["lsp"]),
    transport: TransportKind.stdio,
  };
  return new LanguageClient(
    "cgraph",
    "cgraph",
    { run: server, debug: server },
    {
      documentSelector: [
        { scheme: "file", language: "cgraph" },
        { scheme: "untitled", language: "cgraph" },
      ],
    }
  );
}

async function start() {
  client = makeClient();
  try {
    await client.start();
  } catch (error) {
    const path = vscode.workspace.getConfiguration("cgraph").get("server.path", "cgraph");
    vscode.window.showErrorMessage(
      `cgraph: could not start the language server with '${path} lsp' (${error.message}). ` +
        "Install it (pip install 'cgraph-cli[lsp]') or set cgraph.server.path."
    );
  }
}

async function restart() {
  if (client) {
    await client.stop().catch(() => undefined);
  }
  await start();
}

function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("cgraph.restartServer", restart),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("cgraph.server")) {
        restart();
      }
    })
  );
  return start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
