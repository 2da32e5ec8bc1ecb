package index

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/askrepo/askrepo/internal/tools"
)

// randomTree writes n files of random words, some with upper case, some
// non-ASCII, into a new directory.
func randomTree(t testing.TB, rng *rand.Rand, n int) (dir string, contents map[string][]byte) {
	t.Helper()
	dir = t.TempDir()
	words := []string{"func", "Func", "return", "err", "Error", "nil", "x", "héllo", "HÉLLO", "_id", "Server", "server", "NewServer", "{", "}", "(", ")", ":=", "\t", "\n", " "}
	contents = map[string][]byte{}
	for i := range n {
		var b bytes.Buffer
		for range rng.IntN(200) {
			b.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(4) == 0 {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
		rel := fmt.Sprintf("d%d/f%d.txt", i%7, i)
		contents[rel] = b.Bytes()
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, contents
}

func foldASCII(b []byte) []byte {
	out := bytes.Clone(b)
	for i, c := range out {
		out[i] = fold(c)
	}
	return out
}

// TestCandidatesSuperset: for random literals cut from the files
// themselves (and some not in them), every file that holds all of them,
// exactly or folding ASCII case, is a candidate.
func TestCandidatesSuperset(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir, contents := randomTree(t, rng, 300)
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ix, err := Build(t.Context(), ws, "tree", Options{Ctags: "off"})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for p := range contents {
		all = append(all, p)
	}
	slices.Sort(all)
	randomLit := func() string {
		src := contents[all[rng.IntN(len(all))]]
		if len(src) < 3 || rng.IntN(10) == 0 {
			return fmt.Sprintf("zz%dq", rng.IntN(100))
		}
		n := 3 + rng.IntN(min(12, len(src)-2))
		i := rng.IntN(len(src) - n + 1)
		return string(src[i : i+n])
	}
	narrowed := 0
	for range 2000 {
		lits := []string{randomLit()}
		if rng.IntN(3) == 0 {
			lits = append(lits, randomLit())
		}
		fold := rng.IntN(2) == 0
		got, ok := ix.Candidates(lits, fold)
		if !ok {
			t.Fatalf("Candidates(%q) not ok", lits)
		}
		if len(got) < len(all) {
			narrowed++
		}
		for _, p := range all {
			holds := true
			for _, l := range lits {
				if fold {
					holds = holds && bytes.Contains(foldASCII(contents[p]), foldASCII([]byte(l)))
				} else {
					holds = holds && bytes.Contains(contents[p], []byte(l))
				}
			}
			if _, found := slices.BinarySearch(got, p); holds && !found {
				t.Fatalf("Candidates(%q, fold %v) misses %s, which holds them", lits, fold, p)
			}
		}
	}
	if narrowed < 1000 {
		t.Errorf("only %d of 2000 queries narrowed the files: the index does not select", narrowed)
	}
}
