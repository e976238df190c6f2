"""The parameter server's messaging layer: message codec, ZeroMQ Van, Customer, Postoffice.

Imports only zmq, msgpack, numpy and the standard library.
"""
from sparkps.ps.comm.customer import Customer
from sparkps.ps.comm.endpoint import Endpoint, Responder
from sparkps.ps.comm.message import COMMANDS, Message, decode, encode
from sparkps.ps.comm.postoffice import Postoffice, node_name
from sparkps.ps.comm.security import generate_secret
from sparkps.ps.comm.timeouts import Timeouts

__all__ = ["COMMANDS", "Customer", "Endpoint", "Message", "Postoffice", "Responder", "Timeouts", "decode",
           "encode", "generate_secret", "node_name"]
