package devstack

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docPages are the project's documentation pages, from the module root.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(projectRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"README.md", "SECURITY.md", "e2e/README.md"} {
		pages = append(pages, filepath.Join(projectRoot, p))
	}
	return pages
}

var (
	mdLink     = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	docMention = regexp.MustCompile(`\bdocs/[A-Za-z0-9_-]+\.(md|png)\b`)
	slugDrop   = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// prose is a page without its fenced blocks: their text is output and
// code, not links or headings.
func prose(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// anchors are the heading anchors a page has, as GitHub makes them
// (lower case, punctuation dropped, spaces as hyphens, repeats numbered).
func anchors(lines []string) map[string]bool {
	out := map[string]bool{}
	for _, line := range lines {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		slug := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(title), ""), " ", "-")
		for n, s := 1, slug; ; n++ {
			if !out[s] {
				out[s] = true
				break
			}
			s = slug + "-" + string(rune('0'+n))
		}
	}
	return out
}

// Every link of the documentation reaches a file of the project and, with
// an anchor, a heading of that page; every docs/ page named in the text
// exists.
func TestDocLinksResolve(t *testing.T) {
	pageAnchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := pageAnchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		pageAnchors[path] = anchors(prose(string(b)))
		return pageAnchors[path]
	}
	for _, page := range docPages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(projectRoot, page)
		for _, line := range prose(string(b)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				checkLink(t, rel, page, m[1], anchorsOf)
			}
			for _, m := range docMention.FindAllString(line, -1) {
				if _, err := os.Stat(filepath.Join(projectRoot, m)); err != nil {
					t.Errorf("%s names %s, which does not exist", rel, m)
				}
			}
		}
	}
}

// checkLink checks one link target of page (rel from the root).
func checkLink(t *testing.T, rel, page, target string, anchorsOf func(string) map[string]bool) {
	t.Helper()
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return
	}
	file, anchor, _ := strings.Cut(target, "#")
	path := page
	if file != "" {
		path = filepath.Join(filepath.Dir(page), file)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("%s links %s, which does not exist", rel, target)
		return
	}
	if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
		t.Errorf("%s links %s: no such heading", rel, target)
	}
}
