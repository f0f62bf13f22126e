"""What every check of tools/web-browser-test shares: the real `receipt server run` on 127.0.0.1 with
its accounts and web passwords, the members' vaults, one headless Chromium (selenium) and the ways
to look at a page (its size, sideways scroll, images, screenshots under .build/web-shots/)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FIXTURES = os.path.join(ROOT, "Fixtures")
SIZES = [(320, 640), (390, 844), (1280, 800)]


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)
    print(f"ok: {message}", flush=True)


def selenium():
    """selenium's parts, or the failure that says how to install it (never a skip)."""
    for tool in (CHROMIUM, DRIVER):
        if not os.access(tool, os.X_OK):
            fail(f"{tool} is missing: install Debian's chromium and chromium-driver (tools/install-deps)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError:
        fail("selenium is missing: pip install selenium (tools/install-deps)")
    return webdriver, Service, By, StaleElementReferenceException, WebDriverException, WebDriverWait


class Web:
    """The server, its accounts, the vaults made so far and the browser."""

    def __init__(self, receipt, catalog, accounts):
        webdriver, Service, self.By, self.Stale, self.DriverError, self.SeleniumWait = selenium()
        self.receipt, self.catalog = receipt, catalog
        self.work = tempfile.mkdtemp(prefix="receipt-web-")
        self.data = os.path.join(self.work, "data")
        self.shots = os.path.join(ROOT, ".build", "web-shots")
        os.makedirs(self.shots, exist_ok=True)
        print(f"screenshots: {self.shots}", flush=True)
        self.tokens, self.passwords, self.vaults = {}, {}, {}
        for name in accounts:
            self.tokens[name] = json.loads(self.run("server", "account-add", name, "--data", self.data, "--json", *catalog))["token"]
            self.passwords[name] = f"pass-{name}-1234"
            self.run("server", "passwd", name, "--data", self.data, *catalog, stdin=self.passwords[name] + "\n")
        self.server = subprocess.Popen([receipt, "server", "run", "--data", self.data, "--listen", "127.0.0.1:0", "--json"] + catalog,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.driver = None
        line = self.server.stdout.readline()
        if not line:
            fail(f"the server did not start: {self.server.stderr.read()}")
        self.base = "http://" + json.loads(line)["listening"]
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--hide-scrollbars"):
            options.add_argument(arg)
        self.downloads = os.path.join(self.work, "downloads")
        os.makedirs(self.downloads)
        options.add_experimental_option("prefs", {"download.default_directory": self.downloads, "download.prompt_for_download": False})
        self.driver = webdriver.Chrome(service=Service(DRIVER), options=options)
        self.driver.set_page_load_timeout(60)
        self.driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": self.downloads})

    def close(self):
        if self.driver is not None:
            self.driver.quit()
        self.server.terminate()
        self.server.wait(timeout=30)
        shutil.rmtree(self.work, ignore_errors=True)

    # The command line and the members' vaults.

    def run(self, *args, stdin=None, vault=None):
        cmd = [self.receipt] + (["--vault", vault] if vault else []) + list(args)
        done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            fail(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def vault(self, name):
        """The member's vault, made and pointed at the server the first time it is asked for."""
        if name not in self.vaults:
            path = os.path.join(self.work, "vault-" + name)
            self.run("init", vault=path)
            self.run("remote", "set", self.base, "--account", name, "--token-stdin", stdin=self.tokens[name] + "\n", vault=path)
            self.vaults[name] = path
        return self.vaults[name]

    def listed(self, name, zone):
        return json.loads(self.run("list", "--json", "--zone", zone, vault=self.vault(name)))

    # The browser.

    def wait(self, seconds, until):
        """Waits for `until(driver)`; a page being replaced leaves the element just read stale, or gone
        with its document ("does not belong to the document"): wait on, do not fail."""
        def guarded(d):
            try:
                return until(d)
            except self.Stale:
                raise
            except self.DriverError as e:
                if "does not belong to the document" in str(e):
                    return False
                raise
        return self.SeleniumWait(self.driver, seconds, ignored_exceptions=(self.Stale,)).until(guarded)

    def get(self, path):
        self.driver.get(self.base + path)

    def submit(self, css, seconds=30):
        """Clicks the button at `css` and waits until the page it was on is replaced (the button goes
        stale): what the new page has can then be waited for, even an element the old page had too,
        which would otherwise be found before the form was sent (and clicked stale after)."""
        button = self.find(css)
        button.click()

        def replaced(_):
            try:
                button.is_enabled()
                return False
            except self.Stale:
                return True
            except self.DriverError as e:  # gone with its document, as in `wait`
                if "does not belong to the document" in str(e):
                    return True
                raise
        self.SeleniumWait(self.driver, seconds).until(replaced)

    def find(self, css):
        return self.driver.find_element(self.By.CSS_SELECTOR, css)

    def find_all(self, css):
        return self.driver.find_elements(self.By.CSS_SELECTOR, css)

    def main_text(self):
        return self.driver.find_element(self.By.TAG_NAME, "main").text

    def sign_in(self, name):
        """Signs in through the form; returns the session cookie's value."""
        self.driver.delete_all_cookies()
        self.get("/")
        self.driver.find_element(self.By.NAME, "account").send_keys(name)
        self.driver.find_element(self.By.NAME, "password").send_keys(self.passwords[name])
        self.find("form[action='/signin'] button").click()
        self.wait(30, lambda d: "signed in as" in d.page_source)
        check(f"signed in as <strong>{name}</strong>" in self.driver.page_source, f"{name} signs in")
        cookie = self.driver.get_cookie("receipt_session")
        check(cookie is not None and cookie.get("httpOnly") and cookie.get("sameSite") == "Strict",
              f"{name}'s session cookie is HttpOnly and SameSite=Strict")
        return cookie["value"]

    def set_size(self, width, height):
        # The window's outer size differs from the page's: size it so that innerWidth is `width`.
        self.driver.set_window_size(width, height)
        inner = self.driver.execute_script("return [innerWidth, innerHeight]")
        self.driver.set_window_size(width + (width - inner[0]), height + (height - inner[1]))

    def shot(self, name):
        self.driver.save_screenshot(os.path.join(self.shots, name + ".png"))

    def whole_page_shot(self, name, width, height):
        self.set_size(width, min(self.driver.execute_script("return document.documentElement.scrollHeight"), 4000))
        self.shot(name)
        self.set_size(width, height)

    def images_loaded(self):
        return self.driver.execute_script("return [...document.images].every(i => i.complete && i.naturalWidth > 0)")

    def no_sideways_scroll(self, page, width):
        scroll, inner = self.driver.execute_script("return [document.documentElement.scrollWidth, innerWidth]")
        if scroll > inner:
            self.shot(f"overflow-{width}")
            wide = self.driver.execute_script("""return [...document.querySelectorAll('body *')]
                .filter(e => e.getBoundingClientRect().right > innerWidth + 1)
                .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""")
            print(f"wider than the screen: {wide}", flush=True)
        check(scroll <= inner, f"{page} at {width} px wide does not scroll sideways ({scroll} <= {inner})")

    # Plain HTTP beside the browser (what a forged or refused request gets).

    def status_of(self, path, cookie=None, method="GET", body=None, headers=None):
        request = urllib.request.Request(self.base + path, method=method, data=body, headers=headers or {})
        if cookie:
            request.add_header("Cookie", f"receipt_session={cookie}")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def post_form(self, path, cookie, fields):
        body = urllib.parse.urlencode(fields).encode()
        return self.status_of(path, cookie=cookie, method="POST", body=body,
                              headers={"Content-Type": "application/x-www-form-urlencoded"})

    def fetch(self, path, cookie):
        request = urllib.request.Request(self.base + path, headers={"Cookie": f"receipt_session={cookie}"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.headers.get("Content-Type"), answer.read()

    def csrf(self):
        return self.find("header input[name=csrf]").get_attribute("value")
