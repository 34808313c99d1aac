package main

import (
	"fmt"
	"os"

	"github.com/shmdoctor/shmdoctor/analyze/suppress"
	"github.com/spf13/pflag"
)

// loadConfig reads the config file (--config, else .shmdoctor.yaml from the working folder
// upward, none with --no-config) and lets it fill the flags the command line did not set:
// flags win over the file, the file over the defaults. It returns an empty config when
// there is none.
func (f *checkFlags) loadConfig(fs *pflag.FlagSet) (*suppress.ConfigFile, error) {
	if f.noConfig && fs.Changed("config") {
		return nil, usagef("--config and --no-config exclude each other")
	}
	path := f.config
	switch {
	case f.noConfig:
		return &suppress.ConfigFile{}, nil
	case fs.Changed("config") && path == "":
		return nil, usagef("--config needs a file name (--no-config reads none)")
	case path == "":
		cwd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("finding %s: %w", suppress.ConfigFileName, err)
		}
		if path, err = suppress.FindConfigFile(cwd); err != nil || path == "" {
			return &suppress.ConfigFile{}, err
		}
	}
	read := suppress.ReadConfigFile
	if fs.Changed("config") {
		read = suppress.ReadGivenConfigFile // given like a PATH: <(...) is read once
	}
	c, err := read(path)
	if err != nil {
		return nil, err
	}
	set := func(flag, value string, to *string) {
		if value != "" && !fs.Changed(flag) {
			*to = value
		}
	}
	set("policy", string(c.Policy), &f.policy)
	set("target", string(c.Target), &f.target)
	set("fail-on", c.FailOn, &f.failOn)
	if c.Need != "" && !fs.Changed("need") {
		f.need, f.load.NeedFrom = c.Need, "need in "+c.Path
	}
	return c, nil
}
