package librate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// docRoots are the directories whose Go packages TestDocComments checks, every package
// below them included, nested modules too: the API, its Redis client and the peer
// benchmarks (modules of their own), the internal packages the tests share, and the
// examples' modules, which export little but are read as examples of the API.
var docRoots = []string{".", filepath.Join("..", "..", "examples", "go")}

// TestDocComments fails, with file:line and name, for each exported identifier of the
// packages under docRoots without a doc comment, so `go doc` documents the whole API.
// It reads every non-test .go file whatever its build tags (both gc_debug.go and
// gc_nodebug.go, say), and checks:
//
//   - each package: a package comment, in at least one of its files;
//   - each exported function, and each exported method of an exported type;
//   - each exported type;
//   - each exported constant and variable: its own comment (above it or at the end of
//     its line), or the comment of the parenthesized group it is declared in, as `go
//     doc` shows a group's comment over the group;
//   - each exported field of an exported struct type, and each exported method of an
//     exported interface type: its own comment, above it or at the end of its line.
//
// Fields are checked, since a field such as Decision.RetryAfter is API that only its
// comment explains; several fields declared on one line (`A, B uint64`) share the
// comment. Unexported identifiers, and the exported identifiers of package main (which
// nothing can import), are not checked.
func TestDocComments(t *testing.T) {
	missing := 0
	for _, root := range docRoots {
		for _, dir := range goPackageDirs(t, root) {
			for _, problem := range undocumented(t, dir) {
				t.Error(problem)
				missing++
			}
		}
	}
	if missing > 0 {
		t.Logf("%d exported identifiers without a doc comment", missing)
	}
}

// goPackageDirs lists the directories under root that hold a non-test .go file, skipping
// testdata and hidden directories as the go tool does.
func goPackageDirs(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			skip := name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
			if path != root && skip {
				return filepath.SkipDir
			}
			return nil
		}
		if isSource(name) {
			seen[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	dirs := make([]string, 0, len(seen))
	for dir := range seen {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	return dirs
}

// isSource reports whether a file name is a non-test Go source file.
func isSource(name string) bool {
	return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
}

// undocumented returns "file:line: name has no doc comment" for each exported
// identifier of the package in dir without one.
func undocumented(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	var files []*ast.File
	for _, entry := range entries {
		if entry.IsDir() || !isSource(entry.Name()) {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, entry.Name()), nil, parser.ParseComments)
		if err != nil {
			t.Fatalf("parsing: %v", err)
		}
		files = append(files, file)
	}
	if len(files) == 0 || files[0].Name.Name == "main" {
		return nil
	}
	var problems []string
	report := func(pos token.Pos, what string) {
		problems = append(problems, fset.Position(pos).String()+": "+what+" has no doc comment")
	}
	packageDoc := false
	for _, file := range files {
		packageDoc = packageDoc || file.Doc != nil
	}
	if !packageDoc {
		report(files[0].Package, "package "+files[0].Name.Name)
	}
	// Methods count only on exported types, which may be declared in another file.
	exportedTypes := map[string]bool{}
	for _, file := range files {
		for _, decl := range file.Decls {
			if gen, ok := decl.(*ast.GenDecl); ok && gen.Tok == token.TYPE {
				for _, spec := range gen.Specs {
					name := spec.(*ast.TypeSpec).Name
					exportedTypes[name.Name] = name.IsExported()
				}
			}
		}
	}
	for _, file := range files {
		for _, decl := range file.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if !decl.Name.IsExported() || decl.Doc != nil {
					continue
				}
				if decl.Recv == nil {
					report(decl.Name.Pos(), "func "+decl.Name.Name)
				} else if recv := receiverType(decl.Recv.List[0].Type); exportedTypes[recv] {
					report(decl.Name.Pos(), "method "+recv+"."+decl.Name.Name)
				}
			case *ast.GenDecl:
				problems = append(problems, undocumentedSpecs(fset, decl)...)
			}
		}
	}
	return problems
}

// undocumentedSpecs checks the types, constants and variables of one declaration, and
// the fields and interface methods of its exported types.
func undocumentedSpecs(fset *token.FileSet, decl *ast.GenDecl) []string {
	var problems []string
	report := func(pos token.Pos, what string) {
		problems = append(problems, fset.Position(pos).String()+": "+what+" has no doc comment")
	}
	for _, spec := range decl.Specs {
		switch spec := spec.(type) {
		case *ast.TypeSpec:
			if !spec.Name.IsExported() {
				continue
			}
			if spec.Doc == nil && decl.Doc == nil {
				report(spec.Name.Pos(), "type "+spec.Name.Name)
			}
			switch typ := spec.Type.(type) {
			case *ast.StructType:
				for _, field := range typ.Fields.List {
					for _, name := range field.Names {
						if name.IsExported() && field.Doc == nil && field.Comment == nil {
							report(name.Pos(), "field "+spec.Name.Name+"."+name.Name)
						}
					}
				}
			case *ast.InterfaceType:
				for _, method := range typ.Methods.List {
					for _, name := range method.Names {
						if name.IsExported() && method.Doc == nil && method.Comment == nil {
							report(name.Pos(), "method "+spec.Name.Name+"."+name.Name)
						}
					}
				}
			}
		case *ast.ValueSpec:
			for _, name := range spec.Names {
				if name.IsExported() && spec.Doc == nil && spec.Comment == nil && decl.Doc == nil {
					report(name.Pos(), decl.Tok.String()+" "+name.Name)
				}
			}
		}
	}
	return problems
}

// receiverType is the name of a method receiver's type: T for T, *T, T[P] and *T[P].
func receiverType(expr ast.Expr) string {
	for {
		switch e := expr.(type) {
		case *ast.StarExpr:
			expr = e.X
		case *ast.IndexExpr:
			expr = e.X
		case *ast.IndexListExpr:
			expr = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}
