//! `--report DIR`: the HTML page with its PNG plots — checked as files
//! (every plot a real PNG of the right size with something drawn on it,
//! embedded in the page) and as a browser shows it: rendered by headless
//! Chromium, whose DOM must show the phases, the tables and every plot
//! decoded.
//!
//! The browser part needs `chromium` (Debian package, installed by
//! scripts/setup-bench.sh); without it that test says so and passes,
//! except under `CI=true`, where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use fieldstore_hammer::{run, HammerArgs, Scenario};

fn report(dir: &Path) -> PathBuf {
    let out = dir.join("report");
    let a = HammerArgs {
        root: Some(dir.join("root")),
        scenario: Some(Scenario::A),
        raw: true,
        processes: 2,
        nsteps: 2,
        nlevels: 3,
        nparams: 4,
        field_size: 65536,
        full_check: true,
        no_drop_caches: true,
        report: Some(out.clone()),
        worker_exe: Some(env!("CARGO_BIN_EXE_fieldstore-hammer").into()),
        ..HammerArgs::default()
    };
    let r = run(&a).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let page = out.join("index.html");
    assert_eq!(r.html_page, page.display().to_string());
    assert!(r
        .table()
        .contains(&format!("HTML report: {}", page.display())));
    page
}

/// Width and height of a PNG (its IHDR), after checking the signature.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG signature");
    assert_eq!(&png[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap());
    (be(&png[16..20]), be(&png[20..24]))
}

#[test]
fn the_page_embeds_four_real_plots_and_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path());
    let html = std::fs::read_to_string(&page).unwrap();
    for file in ["bandwidth.png", "timeline.png", "latency.png", "sizes.png"] {
        let png = std::fs::read(page.with_file_name(file)).unwrap();
        let (w, h) = png_size(&png);
        assert!(w >= 800 && h >= 200, "{file}: {w}x{h}");
        // The same bytes are in the page, as a data URI.
        let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
        assert!(html.contains(&b64), "{file} is not embedded");
    }
    assert_eq!(html.matches("src=\"data:image/png;base64,").count(), 4);
    // Nothing is loaded from elsewhere.
    assert!(!html.contains("http://") && !html.contains("https://"));
    for text in [
        "Bandwidth over time",
        "Per-rank timeline",
        "Latency histograms",
        "Access sizes",
        "Time per operation",
        "The store against its backend's raw ceiling",
        "raw-hard-read",
        "All fields found.",
    ] {
        assert!(html.contains(text), "{text} missing");
    }
}

#[test]
fn headless_chromium_renders_the_page() {
    let Some(chromium) = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|b| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(b))
                    .find(|x| x.exists())
            })
        })
    else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "chromium not found: CI must install it (scripts/setup-bench.sh)"
        );
        eprintln!("chromium not found: skipping (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path());
    let url = format!("file://{}", page.display());
    let shot = dir.path().join("shot.png");
    let browser = |extra: &[&str]| {
        let out = Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-extensions",
                "--no-first-run",
                "--allow-file-access-from-files",
            ])
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join("profile").display()
            ))
            .args(extra)
            .arg(&url)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let dom = String::from_utf8(browser(&["--dump-dom"])).unwrap();
    // The page's script ran after the images were decoded.
    assert!(
        dom.contains("plots rendered: 4 of 4"),
        "{}",
        &dom[dom.len().saturating_sub(600)..]
    );
    for text in [
        "<table>",
        "raw-easy-write",
        "Per-rank timeline",
        "All fields found.",
    ] {
        assert!(dom.contains(text), "{text} missing from the rendered DOM");
    }
    browser(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1280,2400",
    ]);
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(png_size(&png), (1280, 2400));
}
