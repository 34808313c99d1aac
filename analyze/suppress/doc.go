// Package suppress reads what silences findings: # shmdoctor-ignore comments, the list of
// x-shmdoctor.ignore and shmdoctor.io/ignore, and the .shmdoctor.yaml config file. The
// loaders scope what it reads to services and lines; analyze.Run applies it.
package suppress
