// Package source reads what the doctor is given, safely: bounded reads of regular files,
// standard input and FIFOs, YAML documents refused at the line where an alias bomb, a
// quadratic mapping or binary content starts, errors located at file:line, and the
// names reports give files. It knows YAML and positions, not compose or Kubernetes.
package source
