"""A generated sentence-pair corpus shaped like GLUE MRPC, so the course runs offline.

Each pair describes an event twice. A paraphrase keeps the meaning and changes words for others
of the same meaning ("gave" / "handed"), and may add an ending that adds no fact ("as planned"):
label 1. A non-paraphrase is written the same way but changes one or two facts: a negation
("never"), swapped roles, another number, another place or another day: label 0. About 68% of
the pairs are paraphrases, as in MRPC. No single word and no length tells the label: the model
has to compare the two sentences.

Lengths vary as in real text: many pairs carry circumstances ("after a long trip , despite the
rain"), which the first sentence puts before the event and the second after it, as a paraphrase
moves a clause. Most pairs have none or one, a few have many: the training pairs have 29 to 119
tokens, half of them at most 33, with a long tail (MRPC's pairs run from about 15 to over 100).
Both sentences carry the same circumstances, so they tell no fact and no label.

Why the words line up: a small BERT learns within a few hundred steps to compare two sentences
whose words line up one to one; facts that moved to another place take it far longer. So the
event is always written in 13 words (`CORE_WORDS`), the last 13 of the first sentence and the
first 12 of the second (without its "."), and both sentences use the same word order (one of
three): the n-th word of the one event stands `CORE_WORDS + 1` tokens before the n-th word of the
other, whatever the circumstances. (Until cache v13 the sentences had no circumstances and the
pairs 29 to 33 tokens, so padding to the longest pair hardly differed from dynamic padding.)

Evaluation pairs are new events: every event pairs an action with a kind of thing, and the
pairs in `EVALUATION_COMBINATIONS` occur only in the validation and test splits. Training
pairs, and the pre-training text of `helpers.pretraining`, never use them, so no validation or
test sentence can occur in either (tests/test_pretraining.py checks).
"""
import random

from datasets import Dataset, DatasetDict

DEFAULT_SIZES = {"train": 6000, "validation": 500, "test": 500}
EVALUATION_SPLITS = ("validation", "test")

PEOPLE = "Anna Budi Carla Dewi Emma Fajar Gita Hugo".split()
CITIES = "Jakarta Utrecht Bandung Leiden Surabaya Delft Medan Groningen".split()
THINGS = "books letters laptops bicycles paintings tickets boxes lamps".split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
# Each action: ways of writing it with the same meaning, some of them two words long.
ACTIONS = [("gave", "handed"), ("sent", "mailed"), ("sold", "traded"), ("showed", "presented"),
           ("lent", "loaned"), ("delivered", "brought"), ("offered", "proposed")]
ENDINGS = ["", "", "as planned", "that week", "as they had agreed", "after a short talk"]
# Circumstances both sentences of a pair carry: they add length, and no fact
CIRCUMSTANCES = ["after a long trip", "despite the heavy rain", "with great care", "as the sun went down",
                 "without any help", "for the second time", "after many weeks of waiting", "in a hurry",
                 "while the others were away", "with a big smile", "before the shops closed",
                 "at the end of a busy day", "just as the meeting began", "with the help of two friends"]
# How often a pair carries 0, 1, 2, ... 7 circumstances: a long tail of lengths, as in real text;
# at most 7 keeps the longest pair under 128 tokens, the most the default model takes
CIRCUMSTANCE_COUNTS = (65, 27, 5, 1.2, 0.8, 0.5, 0.3, 0.2)
CORE_WORDS = 13           # the words of write_sentence: the event, ending with "."
# (action, thing) pairs seen only in evaluation: a quarter of all, every word still in training
EVALUATION_COMBINATIONS = frozenset(
    (action, thing) for action in range(len(ACTIONS)) for thing in range(len(THINGS))
    if (action + thing) % 4 == 0)
POSITIVE_SHARE = 0.68  # as in MRPC
CHANGES = ("negation", "swapped_roles", "number", "city", "day")


def is_evaluation_event(event):
    """True for the events that only the validation and test splits may use."""
    return (event["action"], event["things"]) in EVALUATION_COMBINATIONS


def random_event(rng, evaluation=False):
    """A random event: from the evaluation combinations, or (evaluation=False) from the others."""
    while True:
        event = {
            "giver": None, "receiver": None, "action": rng.randrange(len(ACTIONS)),
            "count": rng.randint(2, 9), "things": rng.randrange(len(THINGS)),
            "city": rng.choice(CITIES), "day": rng.choice(DAYS), "negated": rng.random() < 0.3,
        }
        if is_evaluation_event(event) == evaluation:
            event["giver"], event["receiver"] = rng.sample(PEOPLE, 2)
            return event


def sentence_style(rng):
    """How a pair is worded: the word order and the words for "then" and for the action.

    Every word order has the same number of words, so the words of the two sentences line up
    one to one; only the ending of the second sentence is free (see `add_ending`)."""
    return {"order": rng.randrange(3), "adverb": rng.choice(["then", "once"])}


def write_sentence(event, style, rng):
    """Write an event in the given style, with words of the same meaning chosen at random."""
    adverb = "never" if event["negated"] else style["adverb"]
    verb = rng.choice(ACTIONS[event["action"]])
    who, whom, count = event["giver"], event["receiver"], event["count"]
    things, city, day = THINGS[event["things"]], event["city"], event["day"]
    return [
        f"{who} {adverb} {verb} {count} {things} to {whom} , in {city} on {day} .",
        f"On {day} in {city} , {who} {adverb} {verb} {count} {things} to {whom} .",
        f"In {city} , {who} {adverb} {verb} {count} {things} to {whom} on {day} .",
    ][style["order"]]


def circumstances(rng):
    """Circumstances for a pair: mostly none or one, now and then many (CIRCUMSTANCE_COUNTS)."""
    return rng.sample(CIRCUMSTANCES, rng.choices(range(len(CIRCUMSTANCE_COUNTS)), CIRCUMSTANCE_COUNTS)[0])


def write_pair(event, other, rng):
    """(sentence1, sentence2): `event` and `other` written alike, word for word in the same places.

    The circumstances come before the first sentence's event and after the second's; the second
    may also end with words that add no fact (ENDINGS)."""
    style = sentence_style(rng)
    first, second = write_sentence(event, style, rng), write_sentence(other, style, rng)
    ending, extra = rng.choice(ENDINGS), " , ".join(circumstances(rng))
    if extra:  # "After a long trip , on Monday in Delft , ..." (a name keeps its capital)
        first = f"{extra[0].upper()}{extra[1:]} , {first if style['order'] == 0 else first[0].lower() + first[1:]}"
    second = second[:-2] + (f" {ending}" if ending else "") + (f" , {extra}" if extra else "") + " ."
    return first, second


def change_fact(event, change, rng):
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
    else:
        raise ValueError(f"change_fact(change={change!r}): use one of {CHANGES}")
    return changed


def _pair(rng, evaluation):
    """(sentence1, sentence2, label, changes): changes names the facts a non-paraphrase changed."""
    event = random_event(rng, evaluation)
    label = int(rng.random() < POSITIVE_SHARE)
    changes = () if label else tuple(rng.sample(CHANGES, rng.choice([1, 2])))
    other = event
    for change in changes:
        other = change_fact(other, change, rng)
    return (*write_pair(event, other, rng), label, changes)


def make_paraphrase_corpus(sizes=None, seed=0, with_changes=False):
    """Build the corpus as a DatasetDict with MRPC's columns: sentence1, sentence2, label, idx.

    The same `seed` and `sizes` always give the same data. The validation and test splits hold
    new events only (see the module's docstring). with_changes=True adds a column `changes`:
    the facts a non-paraphrase changed, e.g. "city+negation" ("" for a paraphrase).
    """
    sizes = {**DEFAULT_SIZES, **(sizes or {})}
    for split, size in sizes.items():
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"sizes[{split!r}] must be a whole number >= 1, got {size!r}")
    splits = {}
    for split, size in sizes.items():
        rng = random.Random(f"{seed}-{split}")  # each split its own stream: sizes do not interact
        sentence1, sentence2, labels, changes = zip(*(_pair(rng, split in EVALUATION_SPLITS)
                                                      for _ in range(size)))
        columns = {"sentence1": list(sentence1), "sentence2": list(sentence2),
                   "label": list(labels), "idx": list(range(size))}
        if with_changes:
            columns["changes"] = ["+".join(sorted(c)) for c in changes]
        splits[split] = Dataset.from_dict(columns)
    return DatasetDict(splits)
