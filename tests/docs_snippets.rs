//! The C and C++ page's first programs (docs/c.md) are the quickstart examples the C and
//! C++ tests compile and run (ffi/tests/c_api.rs, ffi/tests/cpp_api.rs), character for character,
//! so the page can never show code that does not build.

/// Asserts that docs/c.md's first fenced block in `language` is exactly `example`.
fn assert_snippet_is(language: &str, example: &str) {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/docs/c.md")).unwrap();
    let source = std::fs::read_to_string(format!("{root}/{example}")).unwrap();
    let fence = format!("```{language}\n");
    let start = readme
        .find(&fence)
        .unwrap_or_else(|| panic!("docs/c.md has no {language} snippet"))
        + fence.len();
    let end = start + readme[start..].find("```").expect("the snippet is closed");
    assert_eq!(
        &readme[start..end],
        source,
        "docs/c.md's {language} snippet differs from {example}"
    );
}

#[test]
fn c_page_c_snippet_is_the_compiled_quickstart() {
    assert_snippet_is("c", "examples/c/quickstart.c");
}

#[test]
fn c_page_cpp_snippet_is_the_compiled_quickstart() {
    assert_snippet_is("cpp", "examples/cpp/quickstart.cpp");
}
