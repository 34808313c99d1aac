// Package fix makes and applies the text edits of fixes: it finds lines, indentation and
// anchors in a file as it was read, inserts and replaces keys without touching any other
// byte, applies a project's fixes whole or not at all, and renders the unified diff. It
// knows positions and text, not rules.
package fix
