package mpi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// mpiNameMarkers are the phrases of which a doc comment must contain at
// least one: the MPI (or MPIX_, ULFM's) name the identifier stands for,
// mpi4py's name where MPI has none (the lower-case value calls), or an
// explicit "no MPI counterpart" followed by the nearest analogue.
var mpiNameMarkers = []string{"MPI_", "MPIX_", "mpi4py", "no MPI counterpart"}

// exemptMethod reports whether a method needs no MPI name: methods whose
// meaning a Go interface fixes, not MPI. Error and Unwrap (error), String
// and Format (fmt.Stringer, fmt.Formatter), Is (errors.Is); Name, Marshal
// and Unmarshal only on a type that has all three, i.e. implements Codec
// (Comm.Name, which is MPI_Comm_get_name, is not exempt).
func exemptMethod(name string, recvMethods map[string]bool) bool {
	switch name {
	case "Error", "Unwrap", "String", "Format", "Is":
		return true
	case "Name", "Marshal", "Unmarshal":
		return recvMethods["Name"] && recvMethods["Marshal"] && recvMethods["Unmarshal"]
	}
	return false
}

// namesMPI reports whether doc contains one of mpiNameMarkers as a whole
// word (not the tail of FTMPI_).
func namesMPI(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	// Words joined by single spaces: a phrase may wrap across lines.
	text := strings.Join(strings.Fields(doc.Text()), " ")
	for _, m := range mpiNameMarkers {
		for i := 0; ; {
			j := strings.Index(text[i:], m)
			if j < 0 {
				break
			}
			i += j
			// A whole word only: FTMPI_SPIN (an environment variable)
			// does not name MPI_SPIN.
			if i == 0 || !isIdentByte(text[i-1]) {
				return true
			}
			i += len(m)
		}
	}
	return false
}

func isIdentByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// recvTypeName is the name of a method's receiver type (T for T, *T,
// T[P], *T[P]).
func recvTypeName(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestExportedNamesMPICounterpart checks issue 12 item 8, "every exported
// identifier names its MPI counterpart": in the non-test files of package
// mpi, every exported function, method, type, and package-level exported
// const and var has a doc comment that names the MPI function, constant or
// object it stands for ("MPI_Comm_dup", "MPIX_Comm_shrink"), or mpi4py's
// name, or says "no MPI counterpart" (and what it is instead). A const or
// var may be covered by the doc comment of its group, by its own doc
// comment or by its line comment. Missing doc comments fail. Struct fields
// and interface methods are not checked (their type's doc names the MPI
// object), nor methods of unexported types (not in the API); methods that
// a Go interface defines are exempt (exemptMethod).
func TestExportedNamesMPICounterpart(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatalf("parsing package mpi: %v", err)
	}
	pkg, ok := pkgs["mpi"]
	if !ok {
		t.Fatalf("no package mpi in the test's directory (found %d packages)", len(pkgs))
	}

	// Methods per receiver type, for the Codec exemption.
	methods := map[string]map[string]bool{}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
				r := recvTypeName(fd)
				if methods[r] == nil {
					methods[r] = map[string]bool{}
				}
				methods[r][fd.Name.Name] = true
			}
		}
	}

	var bad []string
	checked := 0
	report := func(pos token.Pos, what string, doc *ast.CommentGroup) {
		checked++
		if namesMPI(doc) {
			return
		}
		p := fset.Position(pos)
		why := "names no MPI counterpart"
		if doc == nil {
			why = "has no doc comment"
		}
		bad = append(bad, p.Filename+":"+strconv.Itoa(p.Line)+": "+what+" "+why)
	}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					report(d.Pos(), "func "+d.Name.Name, d.Doc)
					continue
				}
				r := recvTypeName(d)
				if !ast.IsExported(r) {
					// A method of an unexported type is no exported
					// identifier: go doc does not show it (collNet's
					// Isend implements an internal interface).
					continue
				}
				if exemptMethod(d.Name.Name, methods[r]) {
					continue
				}
				report(d.Pos(), "method "+r+"."+d.Name.Name, d.Doc)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						doc := s.Doc
						if doc == nil && len(d.Specs) == 1 {
							doc = d.Doc
						}
						report(s.Pos(), "type "+s.Name.Name, doc)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							kind := "var "
							if d.Tok == token.CONST {
								kind = "const "
							}
							// Its own doc, its line comment or its group's doc.
							var doc *ast.CommentGroup
							for _, c := range []*ast.CommentGroup{s.Doc, s.Comment, d.Doc} {
								if c != nil && (doc == nil || namesMPI(c)) {
									doc = c
								}
							}
							report(n.Pos(), kind+n.Name, doc)
						}
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d exported identifiers in package mpi; the parse missed files", checked)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	if len(bad) > 0 {
		t.Logf("%d of %d exported identifiers fail; a doc comment must contain one of %q", len(bad), checked, mpiNameMarkers)
	}
}

// TestNamesMPIMarkers checks the checker: which doc comments count as
// naming an MPI counterpart.
func TestNamesMPIMarkers(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want bool
	}{
		{"// Rank is the rank (MPI_Comm_rank).", true},
		{"// Shrink (MPIX_Comm_shrink).", true},
		{"// SendValue is mpi4py's send.", true},
		{"// Run ... It has no MPI\n// counterpart: mpiexec.", true}, // wrapped
		{"// Spin is read from FTMPI_SPIN.", false},                  // not MPI_SPIN
		{"// Rank is this process's rank.", false},
		{"", false}, // no doc comment
	} {
		var doc *ast.CommentGroup
		if c.doc != "" {
			for _, line := range strings.Split(c.doc, "\n") {
				doc = appendComment(doc, line)
			}
		}
		if got := namesMPI(doc); got != c.want {
			t.Errorf("namesMPI(%q) = %v, want %v", c.doc, got, c.want)
		}
	}
	codec := map[string]bool{"Name": true, "Marshal": true, "Unmarshal": true}
	comm := map[string]bool{"Name": true, "Rank": true}
	if !exemptMethod("Marshal", codec) || !exemptMethod("Name", codec) || exemptMethod("Name", comm) || exemptMethod("Rank", comm) || !exemptMethod("Error", comm) {
		t.Error("exemptMethod: want Error and a Codec's Name/Marshal exempt, not Comm.Name or Comm.Rank")
	}
}

func appendComment(g *ast.CommentGroup, text string) *ast.CommentGroup {
	if g == nil {
		g = &ast.CommentGroup{}
	}
	g.List = append(g.List, &ast.Comment{Text: text})
	return g
}
