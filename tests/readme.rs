//! The README's C snippet is the example the C tests compile and run, character for
//! character, so the README can never show code that does not build.

#[test]
fn readme_c_snippet_is_the_compiled_quickstart() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let quickstart = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/c/quickstart.c"
    ))
    .unwrap();
    let start = readme.find("```c\n").expect("README has a C snippet") + "```c\n".len();
    let end = start + readme[start..].find("```").expect("the snippet is closed");
    assert_eq!(
        &readme[start..end],
        quickstart,
        "README's C snippet differs from examples/c/quickstart.c"
    );
}
