"""The parameter server's messaging layer: message codec, ZeroMQ Van, Customer, Postoffice.

Imports only zmq, msgpack, numpy and the standard library.
"""
from sparkps.comm.message import COMMANDS, Message, decode, encode, generate_secret
from sparkps.comm.postoffice import Customer, Endpoint, Postoffice, Responder, node_name
from sparkps.comm.timeouts import Timeouts

__all__ = ["COMMANDS", "Customer", "Endpoint", "Message", "Postoffice", "Responder", "Timeouts", "decode",
           "encode", "generate_secret", "node_name"]
