package tools

// Options configures the tools; the zero value gives every default. Every
// constructor has the one shape New<Tool>(ws *Workspace, opts Options) and
// reads only its own part of opts: the set of tools is then built from one
// value, in one place (Default), and an option added to one tool changes no
// signature and no caller.
type Options struct {
	// Git configures git_log, git_show and git_blame.
	Git GitOptions
	// Search configures search_code.
	Search SearchCodeOptions
	// Index, when set, gives the tools the code index of the checkout's
	// commit (see CodeIndex): search_code narrows its scan through it, and
	// find_symbol, find_references and repo_map answer from it. Without
	// one they scan.
	Index IndexSource
}

// Every tool is run, summarized and described by the registry.
var _ = []interface {
	Tool
	Summarizer
	Describer
}{(*ListFiles)(nil), (*ReadFile)(nil), (*SearchCode)(nil), (*Glob)(nil), (*GitLog)(nil), (*GitShow)(nil), (*GitBlame)(nil),
	(*FindSymbol)(nil), (*FindReferences)(nil), (*RepoMap)(nil)}

// Default returns the tools the service gives the model, every one over
// ws. Every checkout gets the same set, so the definitions sent with each
// request (sorted by the Registry) stay byte-identical across turns,
// threads and repositories, and the provider's prompt cache holds.
func Default(ws *Workspace, opts Options) []Tool {
	return []Tool{
		NewListFiles(ws, opts),
		NewReadFile(ws, opts),
		NewSearchCode(ws, opts),
		NewGlob(ws, opts),
		NewGitLog(ws, opts),
		NewGitShow(ws, opts),
		NewGitBlame(ws, opts),
		NewFindSymbol(ws, opts),
		NewFindReferences(ws, opts),
		NewRepoMap(ws, opts),
	}
}
