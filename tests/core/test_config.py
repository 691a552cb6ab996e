from pathlib import Path

import pytest

from core.contracts.config import ConfigError, load_settings


def test_layers_environment_over_dotenv_over_toml(tmp_path):
    toml = tmp_path / "kernelrank.toml"
    toml.write_text('home = "/srv/kr"\nrate_limit_per_minute = 3\ngpus = ["H100"]\n')
    dotenv = tmp_path / ".env"
    dotenv.write_text("KERNELRANK_RATE_LIMIT_PER_MINUTE=5\nexport SLACK_BOT_TOKEN='xoxb-secret'\n")
    settings = load_settings({"KERNELRANK_GPUS": "H100, A100-80GB", "USER": "ada"}, config_file=toml, dotenv=dotenv)
    assert settings.home == Path("/srv/kr")
    assert settings.rate_limit_per_minute == 5
    assert settings.gpus == ["H100", "A100-80GB"]
    assert settings.user == "ada"
    assert settings.database == Path("/srv/kr/kernelrank.duckdb")
    assert "xoxb-secret" not in repr(settings)


def test_bad_values_name_the_setting(tmp_path):
    with pytest.raises(ConfigError, match="KERNELRANK_ACK_WAIT_S"):
        load_settings({"KERNELRANK_ACK_WAIT_S": "soon"}, config_file=tmp_path / "none.toml", dotenv=None)


def test_unknown_toml_keys_are_refused(tmp_path):
    toml = tmp_path / "kernelrank.toml"
    toml.write_text("colour = 'blue'\n")
    with pytest.raises(ConfigError, match="colour"):
        load_settings({}, config_file=toml, dotenv=None)
