// Package integration tests what ships around the doctor rather than inside it: the release
// build (make release) and the CI examples (.pre-commit-hooks.yaml, docs/ci, the onboarding
// script). It holds tests only.
package integration
