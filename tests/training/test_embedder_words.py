"""`--name-word-dropout`'s text rule: a request loses its gold tool's name words, never down to a stub."""

from training.embedder import name_words, without_name_words


def test_name_words_split_at_case_and_separators():
    assert name_words("getUserTokens") == {"get", "user", "token"}
    assert name_words("weather.get_forecast-v2") == {"weather", "get", "forecast", "v2"}


def test_request_loses_the_name_words_in_any_case_and_punctuation():
    request = "Search flights from Boston to Paris, then Book the cheapest."
    assert without_name_words(request, "searchFlights") == "from Boston to Paris, then Book the cheapest."
    assert without_name_words(request, "book_flight") == "Search from Boston to Paris, then the cheapest."
    assert without_name_words("news about the bus strike", "busNews") == "about the strike"


def test_request_is_kept_where_too_few_words_would_be_left():
    assert without_name_words("get weather forecast", "getWeatherForecast") == "get weather forecast"
    assert without_name_words("get the weather now", "getWeather", keep=2) == "the now"
    assert without_name_words("a request with no name word", "OpenTable") == "a request with no name word"
