//! The shell of the store's small pages (index, matrix, the article's table): one self-contained
//! HTML document with its title as heading, its own CSS, no scripts, no external assets.

use maud::{html, Markup, PreEscaped, DOCTYPE};

pub fn page(title: &str, css: &str, body: Markup) -> String {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) }
                style { (PreEscaped(css)) }
            }
            body {
                h1 { (title) }
                (body)
            }
        }
    };
    let mut page = page.into_string();
    page.push('\n');
    page
}
