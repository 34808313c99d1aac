// Package analyze is the doctor's model and its rule framework: what a service's /dev/shm
// is (ShmPlan, Engine, sizes, workload profiles), what a rule is and sees (Rule, Pass,
// Finding, Severity, Config), what the probe measured (Measurement), and Run, which runs
// rules over a project's plans and applies its suppressions.
//
// It parses no YAML and reads no file. The loaders below build the model: analyze/compose
// loads a stack exactly as docker compose does, analyze/kube reads manifests, and each
// keeps what it read behind a Document, through which rules locate their findings at
// file:line and ask for the edits of a fix. The rules themselves live in analyze/rules.
//
// The flow: files → plans (compose, kube) → findings (Run over rules.All) → fixes (fix)
// → report; and plans → probe → measurements → findings (Run over the probe rules).
//
// The layers, lowest first; a package imports only those before it (TestLayers):
//
//	analyze            the model and the framework
//	analyze/rules      the registry and one file per rule; sees the files only through Pass
//	analyze/source     reading inputs safely, YAML documents, positions and errors
//	analyze/fix        text edits that keep layout, applying fixes, the unified diff
//	analyze/suppress   ignore comments, x-shmdoctor.ignore, annotations, .shmdoctor.yaml
//	analyze/kube       Kubernetes manifests into plans
//	analyze/compose    compose projects into plans, as docker compose loads them
package analyze
