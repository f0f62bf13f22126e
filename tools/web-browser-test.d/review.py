"""The review queue (issue #32 point 3) in olga's zone `review`: four photos her vault reads with the
real Tesseract (two of them the same pharmacy receipt, a re-scan) reach the server with what was read.
At 320x640, 390x844 and 1280x800 the list links "To review (N)"; the queue shows the receipt's image
(wider than 40 px) without sideways scroll, each field with the line it came from, the re-scan's twin;
one field's Accept leaves the receipt's other fields, "Accept all" shows the next receipt and N goes
down. Rita (read) sees the queue without its buttons and her accept is refused; olga's vault pulls
what was accepted in the browser."""
import os

from driver import FIXTURES, SIZES, check

ZONE = "/z/olga/review"


def run(web):
    olga = web.vault("olga")
    web.run("config", "locale", "en-US", vault=olga)
    web.run("zone", "create", "review", vault=olga)
    for name, merchant in (("us-pharmacy.png", "Walgreens"), ("us-pharmacy-rescan.jpg", "Walgreens"),
                           ("corner-shop-a.png", None), ("corner-shop-b.png", None)):
        web.run("import", os.path.join(FIXTURES, "read", name), "--zone", "review", *(["--merchant", merchant] if merchant else []),
                vault=olga)
    web.run("sync", vault=olga)
    web.run("share", "review", "rita", "--role", "read", vault=olga)
    check(len([r for r in web.listed("olga", "review") if r["filled"] or r["suggestions"]]) == 4,
          "olga's vault read fields from the four photos")

    web.sign_in("olga")
    accepted = []
    for index, (width, height) in enumerate(SIZES):
        web.set_size(width, height)
        web.get(ZONE)
        link = web.find("a.to-review")
        check(link.text == f"To review ({4 - index})", f"the list at {width} px links the queue: {link.text!r}")
        link.click()
        web.wait(30, lambda d: "To review (" in d.find_element(web.By.TAG_NAME, "h1").text and web.images_loaded())
        web.no_sideways_scroll("the review queue", width)
        image = web.driver.execute_script("return document.querySelector('.preview img').getBoundingClientRect().width")
        check(image > 40, f"the receipt's image at {width} px is wider than 40 px ({image:.0f})")
        fields = [b.get_attribute("value") for b in web.find_all("form.review-field button[name=accept]")]
        lines = [q.text for q in web.find_all("form.review-field q")]
        check(fields and len(lines) == len(fields), f"each field read is shown with the line it came from: {fields} {lines}")
        current = web.find("form.review-field").get_attribute("action")
        if "Walgreens" in web.find(".details h2").text:
            check(web.find_all("a.twin"), "a re-scan is shown with a link to its twin")
        web.shot(f"review-{width}")
        web.whole_page_shot(f"review-{width}-whole", width, height)
        if len(fields) > 1:
            web.find(f"form.review-field button[name=accept][value={fields[0]}]").click()
            web.wait(30, lambda d: "from=" in d.current_url and len(d.find_elements(web.By.CSS_SELECTOR, "form.review-field")) == len(fields) - 1)
            check(web.find("form.review-field").get_attribute("action") == current,
                  f"accepting the {fields[0]} leaves the same receipt with its other fields")
        web.find("button[name=accept][value=all]").click()
        web.wait(30, lambda d: "from=" in d.current_url and not any(
            f.get_attribute("action") == current for f in d.find_elements(web.By.CSS_SELECTOR, "form.review-field")))
        check(f"To review ({3 - index})" in web.find("h1").text and web.find_all("form.review-field"),
              f"Accept all at {width} px shows the next receipt ({web.find('h1').text})")
        accepted.append(current.split("/r/")[1].split("/")[0])
        web.shot(f"review-{width}-next")

    rita = web.sign_in("rita")
    web.get(ZONE + "/review")
    check(web.find_all("form.review-field") and not web.find_all("button[name=accept]"),
          "rita (read) sees the queue without its buttons")
    action = web.find("form.review-field").get_attribute("action").replace(web.base, "")
    status, _ = web.post_form(action, rita, [("csrf", web.csrf()), ("accept", "all")])
    check(status == 403, f"rita's accept is refused with 403 (got {status})")
    web.run("sync", vault=olga)
    done = {r["id"]: r for r in web.listed("olga", "review")}
    check(all(not done[i]["filled"] and not done[i]["suggestions"] for i in accepted),
          "olga's vault pulls what was accepted in the browser: nothing of those receipts is left to review")
