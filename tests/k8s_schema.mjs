// k8s_schema.mjs - moat's Kubernetes manifests against the Kubernetes
// API's JSON schemas, as the npm package kubernetes-models ships them
// (its validate(): types, enums, required fields; the schemas of
// Kubernetes 1.27, so newer fields such as an init container's
// restartPolicy are not judged, and unknown fields pass).
//
//   node k8s_schema.mjs MODELS_DIR DOCS.json NAME
//
// MODELS_DIR is where kubernetes-models is installed (its node_modules'
// parent); DOCS.json the documents of file NAME as one JSON list
// (k8s_check.py --json).  Prints PASS: or FAIL: per document; exit 0 if
// every one is valid.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [dir, docsFile, name] = process.argv.slice(2);
const models = {
  "v1": "v1",
  "apps/v1": "apps/v1",
  "batch/v1": "batch/v1",
};
const docs = JSON.parse(fs.readFileSync(docsFile, "utf8"));
let failed = 0;
for (const doc of docs) {
  const what = `${name}: ${doc.kind}/${doc.metadata?.name}`;
  const group = models[doc.apiVersion];
  if (group === undefined) {
    console.log(`FAIL: ${what}: apiVersion ${doc.apiVersion} has no schema here`);
    failed++;
    continue;
  }
  const mod = await import(pathToFileURL(path.join(dir, "node_modules",
    "kubernetes-models", group, "index.js")).href);
  const Model = mod[doc.kind];
  if (Model === undefined) {
    console.log(`FAIL: ${what}: no model of kind ${doc.kind} in ${group}`);
    failed++;
    continue;
  }
  try {
    new Model(doc).validate();
    console.log(`PASS: ${what}: valid against the ${doc.apiVersion} schema`);
  } catch (e) {
    console.log(`FAIL: ${what}: ${e.message}`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
