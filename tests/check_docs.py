# Checks the built HTML documentation: every internal link and anchor resolves (mode `links`), and
# a few pages render in headless Chromium with their scripts running and their menus' links valid too
# (mode `browser`, which exits 77, meson's SKIP, when Chromium is not installed).
#
#   check_docs.py links HTML_DIR PAGE...     every .html file under HTML_DIR; the PAGEs must exist
#   check_docs.py browser HTML_DIR PAGE...   renders each PAGE (a file name under HTML_DIR)
#
# Nothing is written outside a temporary directory (Chromium's profile); no screenshots are taken.
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

SKIP = 77


class Page(html.parser.HTMLParser):
    """The links (href and src) of one HTML document and the anchors (id and name) it defines."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.links, self.anchors, self.title_divs = [], set(), 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.anchors.add(attrs[key])
        for key in ("href", "src"):
            if attrs.get(key) is not None and tag in ("a", "area", "link", "script", "img", "iframe"):
                self.links.append(attrs[key])
        if tag == "div" and "title" in (attrs.get("class") or "").split():
            self.title_divs += 1


def parse_file(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8", errors="replace") as f:
            cache[path] = Page(f.read())
    return cache[path]


def broken_links(root, page_path, page):
    """The links of `page` (a file at page_path) that name a missing file or anchor under root."""
    problems = []
    for link in page.links:
        parts = urllib.parse.urlsplit(link)
        if parts.scheme or parts.netloc or link.startswith("//"):
            continue  # javascript:, https:, mailto: ... are not internal
        target = page_path
        if parts.path:
            target = os.path.normpath(os.path.join(os.path.dirname(page_path), urllib.parse.unquote(parts.path)))
            if not target.startswith(root + os.sep):
                problems.append(f"{link}: points outside the documentation")
                continue
            if not os.path.isfile(target):
                problems.append(f"{link}: no such file")
                continue
        fragment = urllib.parse.unquote(parts.fragment)
        if fragment and target.endswith(".html") and fragment not in parse_file(target).anchors:
            problems.append(f"{link}: no anchor #{fragment} in {os.path.relpath(target, root)}")
    return problems


def check_links(root, pages):
    failures = 0
    for page in pages:
        if not os.path.isfile(os.path.join(root, page)):
            print(f"FAIL: missing page {page}")
            failures += 1
    files = links = 0
    for directory, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith(".html"):
                continue
            path = os.path.join(directory, name)
            page = parse_file(path)
            files += 1
            links += len(page.links)
            for problem in broken_links(root, path, page):
                print(f"FAIL: {os.path.relpath(path, root)}: {problem}")
                failures += 1
    print(f"{files} pages, {links} links and anchors checked; {failures} problem(s)")
    return 1 if failures else 0


def check_browser(root, pages):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("chromium is not installed (Debian: apt-get install chromium): pages not rendered")
        return SKIP
    failures = 0
    with tempfile.TemporaryDirectory(prefix="xgrad_docs_chromium_") as profile:
        for name in pages:
            path = os.path.join(root, name)
            if not os.path.isfile(path):
                print(f"FAIL: missing page {name}")
                failures += 1
                continue
            # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
            run = subprocess.run(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile,
                 "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + urllib.parse.quote(path)],
                capture_output=True, text=True, timeout=90, env=dict(os.environ, HOME=profile))
            dom = Page(run.stdout)
            problems = []
            if run.returncode != 0:
                problems.append(f"chromium exited with status {run.returncode}")
            if not dom.title_divs:
                problems.append("no title in the rendered page")
            # Doxygen's menu is built by its scripts: the rendered menu shows they ran.
            if 'id="main-menu"' not in run.stdout or "data-smartmenus-id" not in run.stdout:
                problems.append("the navigation menu was not built (did the page's scripts load?)")
            errors = [line for line in run.stderr.splitlines() if "CONSOLE" in line and "Uncaught" in line]
            problems += [f"script error: {line}" for line in errors]
            problems += broken_links(root, path, dom)
            for problem in problems:
                print(f"FAIL: {name} in Chromium: {problem}")
            failures += len(problems)
            if not problems:
                print(f"ok: {name} renders in Chromium, {len(dom.links)} links valid")
    return 1 if failures else 0


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("links", "browser"):
        print(__doc__ or "usage: check_docs.py links|browser HTML_DIR PAGE...")
        return 2
    root = os.path.realpath(sys.argv[2])
    pages = sys.argv[3:]
    return check_links(root, pages) if sys.argv[1] == "links" else check_browser(root, pages)


if __name__ == "__main__":
    sys.exit(main())
