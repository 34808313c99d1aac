// Package layers holds the test that keeps the probe's rooms apart: the agent protocol, the
// agent that runs inside the probe container, the engine, the doctor's side of a probe run,
// and watch. See TestLayers and docs/architecture.md.
package layers
