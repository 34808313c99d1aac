// Package hostile is the hostile-input suite of `make hostile`: it drives the built doctor
// (bin/shmdoctor) the way a pull request from a stranger does in CI, and prints a matrix of
// the classes it tries, the cases of each and what broke:
//
//   - secrets: every shape of secret in the environment, written into every key, in every
//     format, --fix and baseline, with the probe off and (for the keys the probe reads) on:
//     no run of 8 bytes of a secret in any byte of standard output, standard error or a
//     file written;
//   - outside reads: include, extends, env_file, .env, COMPOSE_FILE and --env-file that lead
//     outside the project root, directly, through symlinks or through variables: refused at
//     the line that names them, the rest analysed, no byte of the outside file printed;
//   - output links: -o, the baseline and --fix --write on planted symlinks: nothing written
//     through them, no link's target created;
//   - injection: control characters, terminal escapes and workflow commands in names, values
//     and file names, in every format: printed visibly escaped;
//   - bombs: expansion in .env files and values, include diamonds, nested defaults, alias
//     bombs, each in a memory cgroup of 1 GiB with a time guard: refused or linear.
//
// Its tests carry the build tag hostile, so that `go test ./...` does not run them; they
// need the Docker Engine for the probed secrets and root for the memory cgroup.
package hostile
