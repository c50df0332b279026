package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Tree is one side's checkout: the product before the change or after it.
type Tree struct {
	Rev     string `json:"rev,omitempty"` // as given on the command line; "" for a working tree
	Commit  string `json:"commit,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Dirty: the working tree had changes to tracked files outside docs/,
	// so it is not Commit as committed.
	Dirty bool   `json:"dirty,omitempty"`
	Dir   string `json:"-"` // where it is for this run
}

// Name is how a section names the tree.
func (t Tree) Name() string {
	short := t.Commit[:min(12, len(t.Commit))]
	subject := t.Subject
	if r := []rune(subject); len(r) > 72 {
		subject = string(r[:71]) + "…"
	}
	switch {
	case t.Commit == "":
		return "a tree outside git"
	case t.Rev != "":
		return fmt.Sprintf("`%s` (%s, %q)", t.Rev, short, subject)
	case t.Dirty:
		return fmt.Sprintf("the working tree at %s (%q) with uncommitted changes", short, subject)
	}
	return fmt.Sprintf("the working tree at %s (%q)", short, subject)
}

// git runs git in dir and returns its trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// checkout adds a detached worktree of rev, from the repository at repo,
// in a new temporary directory. remove deletes it and its record in the
// repository.
func checkout(ctx context.Context, repo, rev string) (t Tree, remove func() error, err error) {
	commit, err := git(ctx, repo, "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return t, nil, err
	}
	dir, err := os.MkdirTemp("", "tilesieve-compare-")
	if err != nil {
		return t, nil, err
	}
	if _, err := git(ctx, repo, "worktree", "add", "--detach", dir, commit); err != nil {
		os.RemoveAll(dir)
		return t, nil, err
	}
	remove = func() error {
		// Not ctx: the worktree is removed after an interrupt too.
		_, err := git(context.Background(), repo, "worktree", "remove", "--force", dir)
		return errors.Join(err, os.RemoveAll(dir))
	}
	t, err = describe(ctx, dir)
	t.Rev = rev
	if err != nil {
		return t, remove, errors.Join(err, remove())
	}
	return t, remove, nil
}

// describe reads the commit a working tree is at and whether its tracked
// files outside docs/ (which a benchmark run rewrites) have changed. A tree
// outside git is described by its directory alone.
func describe(ctx context.Context, dir string) (Tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Tree{}, err
	}
	t := Tree{Dir: abs}
	if _, err := git(ctx, abs, "rev-parse", "--git-dir"); err != nil {
		return t, nil
	}
	if t.Commit, err = git(ctx, abs, "rev-parse", "HEAD"); err != nil {
		return t, err
	}
	if t.Subject, err = git(ctx, abs, "log", "-1", "--format=%s"); err != nil {
		return t, err
	}
	top, err := git(ctx, abs, "rev-parse", "--show-toplevel")
	if err != nil {
		return t, err
	}
	status, err := git(ctx, top, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs")
	if err != nil {
		return t, err
	}
	t.Dirty = status != ""
	return t, nil
}
