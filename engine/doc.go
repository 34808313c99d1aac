// Package engine is the doctor's way to a container engine, shared by the probe and watch:
// the narrow Client (Docker's API, also spoken by Podman) built from the environment and
// docker contexts, the ssh dialer, engine detection, the probe image built locally from the
// doctor's own binary and its shared libraries (or an embedded agent), the labels that mark
// what the doctor creates, run locks, and the removal of leftovers (Clean).
//
// It knows nothing of plans or rules: it imports the model only for the engine's name, and
// the agent protocol only for the version its images are labelled with.
package engine
