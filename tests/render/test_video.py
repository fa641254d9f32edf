"""EnvRenderer's frame sizes: what the model's offscreen buffer allows."""

from __future__ import annotations

import pytest

from robolearn.errors import RobolearnError
from robolearn.render.video import EnvRenderer
from robolearn.sim import SimCfg, make_engine

BUFFER = """<mujoco><visual><global offwidth="{w}" offheight="{h}"/></visual>
<worldbody><geom size="1"/></worldbody></mujoco>"""


def test_a_size_beyond_the_offscreen_buffer_is_refused_when_asked_for_and_fitted_otherwise():
    engine = make_engine(BUFFER.format(w=320, h=240), 1, SimCfg(engine="cpu"))
    with pytest.raises(RobolearnError, match=r"a 640x480 video is larger than the model's "):
        EnvRenderer(engine, 640, 480, fit=False)
    fitted = EnvRenderer(engine, 640, 480)  # a default size, shrunk to the buffer
    assert (fitted.width, fitted.height) == (320, 240)
    fitted.close()


def test_an_offscreen_buffer_opengl_cannot_make_is_named_not_blamed_on_egl():
    """Before: "cannot render offscreen with MUJOCO_GL=egl (...); install Mesa's EGL"."""
    engine = make_engine(BUFFER.format(w=100_000, h=100_000), 1, SimCfg(engine="cpu"))
    with pytest.raises(RobolearnError) as err:
        EnvRenderer(engine)
    assert "OpenGL cannot draw the model's 100000x100000 offscreen buffer" in str(err.value)
    assert "install Mesa" not in str(err.value)
