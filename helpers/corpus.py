"""A generated sentence-pair corpus shaped like GLUE MRPC, so the course runs offline.

Each pair describes an event twice. A paraphrase keeps the meaning and changes words for
others of the same meaning ("gave" / "handed", "then" / "once"): label 1. A non-paraphrase
looks just as similar but changes two or three facts: a negation ("never"), swapped roles,
another number, another place or another day: label 0. About 68% of the pairs are
paraphrases, as in MRPC. No single word tells the label: the model has to compare the two
sentences.

Why it is built this way: a small BERT trained from scratch learns, within a few hundred
steps, to compare two sentences whose words line up; matching facts that moved to another
place takes it far longer (pre-trained models learn that from much more text). So both
sentences of a pair use the same word order and the same number of words.
"""
import random

from datasets import Dataset, DatasetDict

DEFAULT_SIZES = {"train": 6000, "validation": 500, "test": 500}

# Small sets per slot: the model must learn to compare slots across the two sentences.
PEOPLE = "Anna Budi Carla Dewi Emma Fajar Gita Hugo".split()
CITIES = "Jakarta Utrecht Bandung Leiden Surabaya Delft Medan Groningen".split()
THINGS = "books letters laptops bicycles paintings tickets boxes lamps".split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
# Each action: two verbs of the same meaning.
ACTIONS = [("gave", "handed"), ("sent", "mailed"), ("sold", "traded"), ("showed", "presented"),
           ("lent", "loaned"), ("delivered", "brought"), ("offered", "proposed")]
POSITIVE_SHARE = 0.68  # as in MRPC
TEMPLATES = 2
CHANGES = ("negation", "swapped_roles", "number", "city", "day")


def _event(rng):
    giver, receiver = rng.sample(PEOPLE, 2)
    return {
        "giver": giver, "receiver": receiver, "action": rng.choice(ACTIONS),
        "count": rng.randint(2, 9), "things": rng.choice(THINGS),
        "city": rng.choice(CITIES), "day": rng.choice(DAYS), "negated": rng.random() < 0.3,
    }


def _sentence(event, template, rng):
    """Write an event in the given word order, with words of the same meaning chosen at random.

    Every sentence has the same number of words, so the two sentences of a pair line up.
    """
    adverb = "never" if event["negated"] else rng.choice(["then", "once"])
    verb = rng.choice(event["action"])
    who, whom, count, things = event["giver"], event["receiver"], event["count"], event["things"]
    city, day = event["city"], event["day"]
    templates = [
        f"{who} {adverb} {verb} {whom} {count} {things} in {city} on {day} .",
        f"On {day} in {city} {who} {adverb} {verb} {whom} {count} {things} .",
    ]
    return templates[template]


def _changed(event, change, rng):
    """The same event with one fact changed, so the meaning is different."""
    changed = dict(event)
    if change == "negation":
        changed["negated"] = not event["negated"]
    elif change == "swapped_roles":
        changed["giver"], changed["receiver"] = event["receiver"], event["giver"]
    elif change == "number":
        changed["count"] = rng.choice([n for n in range(2, 10) if n != event["count"]])
    elif change == "city":
        changed["city"] = rng.choice([c for c in CITIES if c != event["city"]])
    elif change == "day":
        changed["day"] = rng.choice([d for d in DAYS if d != event["day"]])
    return changed


def _pair(rng):
    event = _event(rng)
    label = int(rng.random() < POSITIVE_SHARE)
    other = event
    if not label:
        changes = rng.choice([2, 3])
        for change in rng.sample(CHANGES, changes):
            other = _changed(other, change, rng)
    template = rng.randrange(TEMPLATES)
    return _sentence(event, template, rng), _sentence(other, template, rng), label


def make_paraphrase_corpus(sizes=None, seed=0):
    """Build the corpus as a DatasetDict with MRPC's columns: sentence1, sentence2, label, idx.

    The same `seed` and `sizes` always give the same data.
    """
    sizes = {**DEFAULT_SIZES, **(sizes or {})}
    for split, size in sizes.items():
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"sizes[{split!r}] must be a whole number >= 1, got {size!r}")
    rng = random.Random(seed)
    splits = {}
    for split, size in sizes.items():
        sentence1, sentence2, labels = zip(*(_pair(rng) for _ in range(size)))
        splits[split] = Dataset.from_dict({
            "sentence1": list(sentence1), "sentence2": list(sentence2),
            "label": list(labels), "idx": list(range(size)),
        })
    return DatasetDict(splits)
