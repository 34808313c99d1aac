package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
)

// rulesCmd lists the catalogue: ID, default severity, name and title.
func rulesCmd(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprintln(stdout, fitHelp("Usage: shmdoctor rules\n\nLists every rule with its default severity. 'shmdoctor explain ID' prints one in full.", helpWidth))
			return exitClean, nil
		}
		return exitUsage, usagef("rules takes no arguments")
	}
	for _, r := range rules.All {
		fmt.Fprintf(stdout, "%s  %-7s  %-30s %s\n", r.ID, r.Severity, r.Name, r.Title)
	}
	return exitClean, nil
}

// explain prints one rule's documentation.
func explain(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) (int, error) {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" {
		if len(args) == 1 {
			fmt.Fprintln(stdout, fitHelp("Usage: shmdoctor explain RULE\n\nRULE is an ID (SHM020) or a name (ipc-host). Prints a rule's rationale, a problematic and a correct example, exceptions and sources.", helpWidth))
			return exitClean, nil
		}
		return exitUsage, usagef("explain takes one rule ID or name, such as SHM001 or ipc-host")
	}
	r := ruleNamed(args[0])
	if r == nil {
		return exitUsage, usagef("%s: no such rule (see shmdoctor rules)", args[0])
	}
	fmt.Fprint(stdout, RuleDoc(r))
	return exitClean, nil
}

// ruleNamed is the rule an argument names: by ID in any case (shm012), or by its name
// (ipc-host); nil when none.
func ruleNamed(s string) *analyze.Rule {
	if r := rules.ByID(strings.ToUpper(s)); r != nil {
		return r
	}
	return rules.ByName(strings.ToLower(s))
}

// RuleDoc renders a rule's documentation as Markdown: the text of explain and of docs/rules.
func RuleDoc(r *analyze.Rule) string { return r.Markdown() }
